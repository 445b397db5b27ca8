/*
 * jemalloc's own API (linked against Debian's libjemalloc.so.2, so that
 * jemalloc is also the malloc the program uses), for --preset jemalloc.
 * Declared here: Debian's runtime package has no header.
 *
 * Sites:
 *   jx_keep:    3 x mallocx(100, 0), kept                 alloc 3/300,  in use 3/300
 *   jx_align:   2 x mallocx(64, MALLOCX_ALIGN(64)), kept   alloc 2/128,  in use 2/128
 *   jx_sized:   4 x mallocx(200, 0), freed with sdallocx   alloc 4/800,  in use 0/0
 *   jx_dalloc:  5 x mallocx(40, 0), freed with dallocx     alloc 5/200,  in use 0/0
 *   jx_rseed:   mallocx(1000, 0), then rallocx'ed          alloc 1/1000, in use 0/0
 *   jx_rallocx: rallocx(p, 5000, 0), kept                  alloc 1/5000, in use 1/5000
 *   jx_xseed:   mallocx(100, 0), then xallocx'ed           alloc 1/100,  in use 0/0
 *   jx_xallocx: xallocx(p, 100, 12, 0) = 112, kept         alloc 1/112,  in use 1/112
 *   jx_malloc:  malloc(24), freed with dallocx             alloc 1/24,   in use 0/0
 * xallocx resizes in place and returns the real size: 100 bytes are in
 * jemalloc's 112-byte size class, which the block fits in with extra=12
 * (checked below: the exit status is 3 otherwise).  nallocx and sallocx
 * compute sizes, and allocate nothing.
 * Events: allocs = 3 + 2 + 4 + 5 + 2 + 2 + 1 = 19; frees = 4 (sdallocx)
 * + 5 + 1 (dallocx) + 1 + 1 (rallocx's and xallocx's old blocks) = 12.
 * No stdio, so nothing else allocates.
 */
#include <stddef.h>
#include <stdlib.h>

void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t sallocx(const void *ptr, int flags);
size_t nallocx(size_t size, int flags);
void sdallocx(void *ptr, size_t size, int flags);
void dallocx(void *ptr, int flags);

#define MALLOCX_ALIGN(a) ((int)__builtin_ctzl(a))
#define NOINLINE __attribute__((noinline))

void *volatile keep[3];
void *volatile aligned[2];
void *volatile tmp;
void *volatile grown;
void *volatile resized;

NOINLINE void jx_keep(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = mallocx(100, 0);
}

NOINLINE void jx_align(void)
{
	for (int i = 0; i < 2; i++)
		aligned[i] = mallocx(64, MALLOCX_ALIGN(64));
}

NOINLINE void jx_sized(void)
{
	for (int i = 0; i < 4; i++) {
		tmp = mallocx(200, 0);
		sdallocx(tmp, 200, 0);
	}
}

NOINLINE void jx_dalloc(void)
{
	for (int i = 0; i < 5; i++) {
		tmp = mallocx(40, 0);
		dallocx(tmp, 0);
	}
}

NOINLINE void *jx_rseed(void)
{
	return mallocx(1000, 0);
}

NOINLINE void jx_rallocx(void *p)
{
	grown = rallocx(p, 5000, 0);
}

NOINLINE void *jx_xseed(void)
{
	return mallocx(100, 0);
}

NOINLINE size_t jx_xallocx(void *p)
{
	resized = p;
	return xallocx(p, 100, 12, 0);
}

NOINLINE void jx_malloc(void)
{
	tmp = malloc(24);
	dallocx(tmp, 0);
}

int main(void)
{
	jx_keep();
	jx_align();
	jx_sized();
	jx_dalloc();
	jx_rallocx(jx_rseed());
	void *p = jx_xseed();
	if (jx_xallocx(p) != 112 || sallocx(p, 0) != 112 || nallocx(100, 0) != 112)
		return 3;
	jx_malloc();
	return 0;
}
