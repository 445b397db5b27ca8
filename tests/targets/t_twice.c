/*
 * Target for heaptrace diff of two runs.  Usage: t_twice N
 *   keep_fn: N x malloc(4096), kept
 *   temp_fn: N x malloc(100), each freed at once
 * In use N objects / 4096N bytes; allocated 2N / 4196N.  Built as a PIE
 * (the compiler's default), so each run maps it, and libc, elsewhere.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

void *volatile kept[64];
void *volatile block;

NOINLINE void keep_fn(int n)
{
	for (int i = 0; i < n; i++)
		kept[i & 63] = malloc(4096);
}

NOINLINE void temp_fn(int n)
{
	for (int i = 0; i < n; i++) {
		block = malloc(100);
		free(block);
	}
}

int main(int argc, char **argv)
{
	int n = argc == 2 ? atoi(argv[1]) : 0;

	if (n < 1 || n > 64)
		return 2;
	keep_fn(n);
	temp_fn(n);
	return 0;
}
