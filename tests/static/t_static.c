/*
 * A statically linked target (tests/run.sh builds it with gcc -static into
 * its scratch directory): the malloc heaptrace must probe is inside the
 * executable.  Each call comes from its own named function:
 *
 *   st_malloc:  3 x malloc(1000); st_free frees one    alloc 3/3000, in use 2/2000
 *   st_calloc:  2 x calloc(7, 30) = 2 x 210, kept      alloc 2/420,  in use 2/420
 *   st_seed:    malloc(100), grown by st_realloc        alloc 1/100,  in use 0/0
 *   st_realloc: realloc(p, 3000)                        alloc 1/3000, in use 1/3000
 *   st_free:    free(st_malloc's first block)           only frees
 *
 * Totals: in use 5 objects, 2000 + 420 + 3000 = 5420 bytes;
 *         allocated 7 objects, 3000 + 420 + 100 + 3000 = 6520 bytes.
 * Frees: st_free 1 + realloc's free of the seed 1 = 2.
 * No stdio, so nothing else allocates.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

void *volatile m[3];
void *volatile c[2];
void *volatile r;

NOINLINE void st_malloc(void)
{
	for (int i = 0; i < 3; i++)
		m[i] = malloc(1000);
}

NOINLINE void st_calloc(void)
{
	for (int i = 0; i < 2; i++)
		c[i] = calloc(7, 30);
}

NOINLINE void st_seed(void)
{
	r = malloc(100);
}

NOINLINE void st_realloc(void)
{
	r = realloc(r, 3000);
}

NOINLINE void st_free(void)
{
	free(m[0]);
}

int main(void)
{
	st_malloc();
	st_calloc();
	st_seed();
	st_realloc();
	st_free();
	return r && m[1] && c[1] ? 0 : 1;
}
