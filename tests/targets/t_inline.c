/*
 * Inline frames, for the symbolization checks (scenario inline).  Built
 * -O2 -g, as distributions build code; every allocation is kept:
 *   inner (inlined into outer):                        3 x 1111
 *   leaf_alloc (t_inline.h) in mid, both inlined into nest: 5 x 2222
 *   the stdio buffer of stdout (a /dev/null), allocated deep in glibc's own
 *   inline frames by printf:                           1 x 4096
 * Totals: in use 9 objects, 3333 + 11110 + 4096 = 18539 bytes.
 * Each allocator call is followed by a store in the caller, so the
 * instruction after the call (the return address) is the caller's, not the
 * inlined function's.  The "@site" comments mark the lines tests look for.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "t_inline.h"

#define NOINLINE __attribute__((noinline))
#define INLINE static inline __attribute__((always_inline))

void *volatile kept_outer[3];
void *volatile kept_nest[5];
/* Loop bounds the compiler cannot see, so it keeps one call site per loop. */
volatile int n_outer = 3, n_nest = 5;

INLINE void *inner(int n)
{
	return malloc(n); /* @site inner */
}

NOINLINE void outer(void)
{
	for (int i = 0; i < n_outer; i++)
		kept_outer[i] = inner(1111); /* @site outer */
}

INLINE void *mid(int n)
{
	return leaf_alloc(n); /* @site mid */
}

NOINLINE void nest(void)
{
	for (int i = 0; i < n_nest; i++)
		kept_nest[i] = mid(2222); /* @site nest */
}

int main(void)
{
	/* A character device that is no terminal: a full buffer of st_blksize (4096). */
	int fd = open("/dev/null", O_WRONLY);

	if (fd < 0 || dup2(fd, 1) < 0)
		return 1;
	outer();
	nest();
	printf("%d\n", 42);
	return 0;
}
