/*
 * Many distinct stacks, for the size of reports (-f html, -f svg).
 * Usage: t_stacks [LEVELS]   (default 16, at most 20)
 *
 * For each PATH in 0 .. 2^LEVELS - 1, main descends LEVELS calls, each to
 * go_a or go_b as bit LEVEL of PATH says, and at the bottom leaf_fn does
 * malloc(16) and keeps it: 2^LEVELS stacks that differ in their frames
 * (65536 at the default), each holding one block of 16 bytes.
 *   in use = allocated: 2^LEVELS objects, 16 x 2^LEVELS bytes.
 * No stdio: nothing else allocates.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

void *volatile sink;
static int levels = 16;

NOINLINE void leaf_fn(void)
{
	sink = malloc(16);
	if (sink == NULL)
		exit(3);
}

NOINLINE void go_a(int level, unsigned path);
NOINLINE void go_b(int level, unsigned path);

/* Each function has its own two call sites: a stack's return addresses spell its path. */
NOINLINE void go_a(int level, unsigned path)
{
	if (level == levels)
		leaf_fn();
	else if (path >> level & 1)
		go_a(level + 1, path);
	else
		go_b(level + 1, path);
}

NOINLINE void go_b(int level, unsigned path)
{
	if (level == levels)
		leaf_fn();
	else if (path >> level & 1)
		go_a(level + 1, path);
	else
		go_b(level + 1, path);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		levels = atoi(argv[1]);
	if (levels < 1 || levels > 20)
		return 2;
	for (unsigned path = 0; path < 1u << levels; path++)
		go_a(0, path);
	return 0;
}
