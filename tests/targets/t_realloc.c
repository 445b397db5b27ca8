/*
 * Target for scenario realloc: reallocs per stack, and the bytes copied by
 * those that moved the block (tests/scenarios/triage.sh holds the numbers).
 *
 *   grow_vector: a vector of 1 KiB doubled 6 times by realloc (2, 4, ...,
 *                64 KiB, under the mmap threshold), a 70000-byte fence
 *                allocated before each (larger than any hole, so from the top
 *                of the heap, right after the vector) so it cannot grow in place: 6 reallocs,
 *                each moved, copying 1+2+4+8+16+32 KiB = 64512 bytes.
 *   shrink:      a 4096-byte buffer shrunk by realloc to 2048, then 1024:
 *                in place (glibc splits the chunk), 2 reallocs, 0 copied.
 * Self-checking: exits 3 if a move or a stay did not happen as said.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

void *volatile fences[8];

NOINLINE char *grow_vector(void)
{
	size_t cap = 1024;
	char *v = malloc(cap);

	memset(v, 1, cap);
	for (int i = 0; i < 6; i++) {
		fences[i] = malloc(70000);
		char *n = realloc(v, cap * 2);
		if (!n || n == v)
			exit(3);
		v = n;
		cap *= 2;
	}
	return v;
}

NOINLINE char *shrink(void)
{
	char *b = malloc(4096);

	for (size_t size = 2048; size >= 1024; size /= 2) {
		char *n = realloc(b, size);
		if (n != b)
			exit(3);
	}
	return b;
}

int main(void)
{
	char *v = grow_vector(), *b = shrink();

	free(v);
	free(b);
	for (int i = 0; i < 6; i++)
		free(fences[i]);
	return 0;
}
