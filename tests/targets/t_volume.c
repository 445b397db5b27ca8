/*
 * Target for scenario volumepaths.  Usage: t_volume N SIZE [EVERY MS]
 *
 * N x malloc(SIZE), each freed at once (volume_alloc, volume_free), and
 * nothing else: the heap's allocated bytes are exactly N x SIZE.  With
 * EVERY and MS, a sleep of MS milliseconds after every EVERY pairs, so
 * that heaptrace's poll (every 10 ms) sees each multiple of
 * --interval-bytes on its own whatever a pair costs; without, as fast as
 * the path lets it (the ring's burst).  Exits 0.
 */
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static NOINLINE void *volume_alloc(size_t size)
{
	return malloc(size);
}

static NOINLINE void volume_free(void *p)
{
	free(p);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 5)
		return 2;
	long n = atol(argv[1]), every = argc == 5 ? atol(argv[3]) : 0, ms = argc == 5 ? atol(argv[4]) : 0;
	size_t size = (size_t)atol(argv[2]);
	struct timespec pause = { ms / 1000, ms % 1000 * 1000000L };

	for (long i = 1; i <= n; i++) {
		volume_free(volume_alloc(size));
		if (every && i % every == 0)
			nanosleep(&pause, NULL);
	}
	return 0;
}
