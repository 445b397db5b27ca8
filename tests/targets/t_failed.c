/*
 * Allocations that fail (glibc returns NULL / ENOMEM): nothing is counted
 * for them, and a failed realloc or reallocarray leaves the old block live.
 *   fail_seed: 1 x malloc(123), kept (survives the failed reallocs)
 *   fail_malloc, fail_calloc, fail_realloc, fail_reallocarray,
 *   fail_posix_memalign, fail_aligned_alloc, fail_valloc, fail_pvalloc:
 *              one failing call each: no allocation
 * The huge size comes from a volatile, so the compiler neither warns nor
 * folds.  No stdio.  Exits 1 if any call unexpectedly succeeds.
 * tests/run.sh holds the expected numbers.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile size_t huge = SIZE_MAX / 2;
volatile size_t max = SIZE_MAX;
void *volatile seed;
void *volatile r;
int bad;

NOINLINE void fail_seed(void)
{
	seed = malloc(123);
}

NOINLINE void fail_malloc(void)
{
	r = malloc(huge);
	bad |= r != NULL;
}

NOINLINE void fail_calloc(void)
{
	r = calloc(huge, 4);  /* overflows */
	bad |= r != NULL;
}

NOINLINE void fail_realloc(void)
{
	r = realloc(seed, huge);  /* fails: seed stays allocated */
	bad |= r != NULL;
}

NOINLINE void fail_reallocarray(void)
{
	r = reallocarray(seed, huge, 4);  /* overflows: seed stays allocated */
	bad |= r != NULL;
}

NOINLINE void fail_posix_memalign(void)
{
	void *p = NULL;
	bad |= posix_memalign(&p, 64, huge) == 0;
	r = p;
}

NOINLINE void fail_aligned_alloc(void)
{
	r = aligned_alloc(64, huge);
	bad |= r != NULL;
}

NOINLINE void fail_valloc(void)
{
	r = valloc(huge);
	bad |= r != NULL;
}

NOINLINE void fail_pvalloc(void)
{
	r = pvalloc(max - 100);  /* rounding up to a page overflows */
	bad |= r != NULL;
}

int main(void)
{
	fail_seed();
	fail_malloc();
	fail_calloc();
	fail_realloc();
	fail_reallocarray();
	fail_posix_memalign();
	fail_aligned_alloc();
	fail_valloc();
	fail_pvalloc();
	return bad ? 1 : 0;
}
