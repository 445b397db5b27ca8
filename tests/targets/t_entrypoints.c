/*
 * Every traced glibc entry point, each called from its own named function,
 * with exactly known sizes.  Some blocks are freed (from ep_free, which is
 * not an allocation site) and some are kept until exit, so the in-use and
 * allocated counters differ.  The program uses no stdio, so the only heap
 * activity in the process is what is listed here; tests/run.sh holds the
 * expected numbers.
 *
 * Several calls nest inside glibc: realloc(NULL, n) calls malloc,
 * realloc(p, 0) calls free, reallocarray tail-calls realloc, posix_memalign
 * with a small alignment calls malloc, aligned_alloc (the same address as
 * memalign) with a small alignment tail-calls malloc.  Each must still be counted exactly once, at the outer call.
 */
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* Volatile sinks: the compiler cannot drop the allocations. */
void *volatile k_malloc[4];
void *volatile k_calloc[2];
void *volatile k_grow;
void *volatile k_shrink;
void *volatile k_rnull;
void *volatile k_zero;
void *volatile k_big;
void *volatile k_ra_null;
void *volatile k_ra_grow;
void *volatile k_pm[2];
void *volatile k_pm_small;
void *volatile k_aligned[2];
void *volatile k_aligned_small;
void *volatile k_memalign;
void *volatile k_valloc[2];
void *volatile k_pvalloc;
void *volatile k_null;

/* malloc: 4 x 1000 bytes; ep_free frees one. */
NOINLINE void ep_malloc(void)
{
	for (int i = 0; i < 4; i++)
		k_malloc[i] = malloc(1000);
}

/* calloc: 2 x (10 x 30) = 2 x 300 bytes; ep_free frees one. */
NOINLINE void ep_calloc(void)
{
	for (int i = 0; i < 2; i++)
		k_calloc[i] = calloc(10, 30);
}

/* realloc growth: 50 bytes from ep_grow_seed, grown to 5000 by ep_realloc_grow. */
NOINLINE void ep_grow_seed(void)
{
	k_grow = malloc(50);
}

NOINLINE void ep_realloc_grow(void)
{
	k_grow = realloc(k_grow, 5000);
}

/* realloc shrink: 2000 bytes shrunk to 200 (glibc shrinks in place, so the
 * new block has the old block's address). */
NOINLINE void ep_shrink_seed(void)
{
	k_shrink = malloc(2000);
}

NOINLINE void ep_realloc_shrink(void)
{
	k_shrink = realloc(k_shrink, 200);
}

/* realloc(NULL, n) is malloc(n). */
NOINLINE void ep_realloc_null(void)
{
	k_rnull = realloc(NULL, 333);
}

/* realloc(p, 0) frees p and returns NULL: no allocation at ep_realloc_zero. */
NOINLINE void ep_zero_seed(void)
{
	k_zero = malloc(444);
}

NOINLINE void ep_realloc_zero(void)
{
	k_zero = realloc(k_zero, 0);
}

/* realloc of an mmapped chunk (mremap). */
NOINLINE void ep_big_seed(void)
{
	k_big = malloc(200000);
}

NOINLINE void ep_realloc_big(void)
{
	k_big = realloc(k_big, 400000);
}

/* reallocarray(NULL, 16, 25) = 400 bytes. */
NOINLINE void ep_reallocarray_null(void)
{
	k_ra_null = reallocarray(NULL, 16, 25);
}

/* reallocarray growth: 60 bytes grown to 30 x 20 = 600. */
NOINLINE void ep_ra_seed(void)
{
	k_ra_grow = malloc(60);
}

NOINLINE void ep_reallocarray_grow(void)
{
	k_ra_grow = reallocarray(k_ra_grow, 30, 20);
}

/* posix_memalign: 2 x 1234 bytes aligned to 64; ep_free frees one.  The
 * pointer comes back through the first argument, not the return value. */
NOINLINE void ep_posix_memalign(void)
{
	for (int i = 0; i < 2; i++) {
		void *p = NULL;
		if (posix_memalign(&p, 64, 1234) != 0)
			abort();
		k_pm[i] = p;
	}
}

/* posix_memalign with alignment 16: glibc calls malloc inside. */
NOINLINE void ep_posix_memalign_small(void)
{
	void *p = NULL;
	if (posix_memalign(&p, 16, 321) != 0)
		abort();
	k_pm_small = p;
}

/* aligned_alloc: 2 x 2048 bytes aligned to 256; ep_free frees one. */
NOINLINE void ep_aligned_alloc(void)
{
	for (int i = 0; i < 2; i++)
		k_aligned[i] = aligned_alloc(256, 2048);
}

/* aligned_alloc with alignment 16: glibc's memalign tail-calls into malloc. */
NOINLINE void ep_aligned_alloc_small(void)
{
	k_aligned_small = aligned_alloc(16, 96);
}

/* memalign: 777 bytes aligned to 128. */
NOINLINE void ep_memalign(void)
{
	k_memalign = memalign(128, 777);
}

/* valloc: 2 x 3000 bytes (requested size, not rounded); ep_free frees one. */
NOINLINE void ep_valloc(void)
{
	for (int i = 0; i < 2; i++)
		k_valloc[i] = valloc(3000);
}

/* pvalloc(5000) counts 5000 rounded up to the page: 8192. */
NOINLINE void ep_pvalloc(void)
{
	k_pvalloc = pvalloc(5000);
}

/* free(NULL) is nothing. */
NOINLINE void ep_free_null(void)
{
	free(k_null);
}

/* Frees one block of several sites; not an allocation site itself. */
NOINLINE void ep_free(void)
{
	free(k_malloc[0]);
	free(k_calloc[0]);
	free(k_pm[0]);
	free(k_aligned[0]);
	free(k_valloc[0]);
}

int main(void)
{
	ep_malloc();
	ep_calloc();
	ep_grow_seed();
	ep_realloc_grow();
	ep_shrink_seed();
	ep_realloc_shrink();
	ep_realloc_null();
	ep_zero_seed();
	ep_realloc_zero();
	ep_big_seed();
	ep_realloc_big();
	ep_reallocarray_null();
	ep_ra_seed();
	ep_reallocarray_grow();
	ep_posix_memalign();
	ep_posix_memalign_small();
	ep_aligned_alloc();
	ep_aligned_alloc_small();
	ep_memalign();
	ep_valloc();
	ep_pvalloc();
	ep_free_null();
	ep_free();
	if (k_zero != NULL)
		return 1;  /* glibc's realloc(p, 0) returns NULL */
	return 0;
}
