/*
 * A target whose peak of in-use bytes is known exactly.
 * Usage: t_peak [nudge|clean]
 *   big_fn:   malloc(64 MiB), freed at once          peak 67108864 here
 *   small_fn: malloc(1 MiB), kept                    in use 1048576
 *   with "nudge", then
 *   top_fn:   malloc(63 MiB + 8192), kept            in use 67117056: a new
 *             exact peak, only 8192 above the first (less than the default
 *             --peak-step, 5% of 64 MiB)
 *   with "clean", then
 *   clean_fn: frees small_fn's block                 in use 0: no leak
 * No stdio, so nothing else allocates.
 */
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

#define MiB 1048576ul

void *volatile big, *volatile small, *volatile top;

NOINLINE void big_fn(void)
{
	big = malloc(64 * MiB);
	if (big == NULL)
		exit(3);
	free(big);
}

NOINLINE void small_fn(void)
{
	small = malloc(MiB);
	if (small == NULL)
		exit(3);
}

NOINLINE void top_fn(void)
{
	top = malloc(63 * MiB + 8192);
	if (top == NULL)
		exit(3);
}

NOINLINE void clean_fn(void)
{
	free(small);
}

int main(int argc, char **argv)
{
	big_fn();
	small_fn();
	if (argc > 1 && !strcmp(argv[1], "nudge"))
		top_fn();
	if (argc > 1 && !strcmp(argv[1], "clean"))
		clean_fn();
	return 0;
}
