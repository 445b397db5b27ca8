/*
 * An allocator left by longjmp, as PostgreSQL's elog(ERROR) leaves palloc:
 *
 *   void *xalloc(size_t n)   malloc(n); n == 0 is "an error": longjmp out of it
 *
 * In order (lvl3 -> lvl2 -> lvl1 -> xalloc, the same frames each time, so
 * that the failed call and the later ones enter xalloc at one stack pointer):
 *   fail_deep:  lvl3(0): longjmp'd out of xalloc, nothing allocated
 *   shallow:    xalloc(10) from main's callee         1 / 10, kept
 *   deep_keep:  3 x lvl3(100)                         3 / 300, kept (innermost frame lvl1)
 * --no-libc --sym xalloc: allocs = 4, missed_returns = 1 (the call that never
 * returned, noticed when shallow's call enters above it); no allocation of
 * deep_keep lost to it.  No stdio, so nothing else allocates.
 */
#include <setjmp.h>
#include <stddef.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

static jmp_buf on_error;
void *volatile kept[8];

NOINLINE void *xalloc(size_t n)
{
	if (!n)
		longjmp(on_error, 1);
	return malloc(n);
}

NOINLINE void *lvl1(size_t n)
{
	void *p = xalloc(n);

	KEEP_FRAME();
	return p;
}

NOINLINE void *lvl2(size_t n)
{
	void *p = lvl1(n);

	KEEP_FRAME();
	return p;
}

NOINLINE void *lvl3(size_t n)
{
	void *p = lvl2(n);

	KEEP_FRAME();
	return p;
}

NOINLINE void fail_deep(void)
{
	kept[7] = lvl3(0);
	KEEP_FRAME();
}

NOINLINE void shallow(void)
{
	kept[0] = xalloc(10);
	KEEP_FRAME();
}

NOINLINE void deep_keep(void)
{
	for (int i = 0; i < 3; i++)
		kept[1 + i] = lvl3(100);
	KEEP_FRAME();
}

int main(void)
{
	if (!setjmp(on_error))
		fail_deep();
	shallow();
	deep_keep();
	for (int i = 0; i < 4; i++)
		if (!kept[i])
			return 1;
	return kept[7] ? 1 : 0;
}
