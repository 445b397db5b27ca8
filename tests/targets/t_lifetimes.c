/*
 * Target for the lifetimes every path reports.  No arguments.
 *   held_fn:  20 x malloc(4096), each freed after nanosleep(5 ms): every
 *             lifetime at least 5 ms, in the bucket of 4 ms (2^22 ns) or above
 *   brief_fn: 200 x malloc(64), each freed at once
 * Nothing left in use; no stdio, so nothing else allocates.
 */
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

void *volatile block;

NOINLINE void held_fn(void)
{
	struct timespec ts = { 0, 5000000 };

	block = malloc(4096);
	while (nanosleep(&ts, &ts))
		;
	free(block);
}

NOINLINE void brief_fn(void)
{
	block = malloc(64);
	free(block);
}

int main(void)
{
	for (int i = 0; i < 20; i++)
		held_fn();
	for (int i = 0; i < 200; i++)
		brief_fn();
	return 0;
}
