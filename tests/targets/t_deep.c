/*
 * An allocation under a call chain deeper than the 127 frames a stack
 * trace keeps: the innermost frames, and so the allocating function, must
 * still be right.
 *   deep_leaf:    1 x malloc(4242), kept, called under 300 levels of recurse()
 *   shallow_leaf: 1 x malloc(1717), kept, called from main
 * No stdio.  tests/run.sh holds the expected numbers.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

void *volatile deep_keep;
void *volatile shallow_keep;
volatile int depth_sink;

NOINLINE void deep_leaf(void)
{
	deep_keep = malloc(4242);
}

NOINLINE int recurse(int n)
{
	if (n == 0) {
		deep_leaf();
		return 0;
	}
	int r = recurse(n - 1);  /* not a tail call */
	depth_sink = n;
	return r + 1;
}

NOINLINE void shallow_leaf(void)
{
	shallow_keep = malloc(1717);
}

int main(void)
{
	if (recurse(300) != 300)
		return 1;
	shallow_leaf();
	return 0;
}
