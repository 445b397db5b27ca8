/*
 * Stress target for scenario_stress and scenario_faults.
 * Usage: t_stress [THREADS [PAIRS [FIFO]]]
 * (default 16 threads, 2000000 malloc/free pairs in total).  With FIFO, it
 * prints "ready" and waits for a line written to FIFO before it starts
 * (heaptrace -p attaches meanwhile).
 *
 * The threads start together (barrier).  Each has its own deterministic
 * PRNG (splitmix64 seeded by the thread number) and keeps a ring of live
 * blocks of random length (1-512 slots).  Each step picks a random slot,
 * frees the block in it (if any) and puts a new block of random size
 * there: 1-2048 bytes, and one step in 1000 64-256 KiB (mmapped by glibc),
 * so lifetimes are random.  Every malloc is made by stress_alloc; the
 * blocks left in the rings at the end stay allocated.
 *
 * At the end main prints, on one line of standard output (write(2), no
 * stdio):
 *   stress: allocs N bytes N live N live_bytes N
 * the number and bytes of stress_alloc's allocations, and of its blocks
 * live at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))
#define MAX_THREADS 64
#define RING_MAX 512

struct worker {
	int id;
	long steps;
	uint64_t allocs, bytes, live, live_bytes;
	void *ring[RING_MAX];
	size_t size[RING_MAX];
};

static struct worker workers[MAX_THREADS];
static pthread_barrier_t start;

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

NOINLINE void *stress_alloc(size_t n)
{
	return malloc(n);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0x1234567ull * (uint64_t)(w->id + 1);
	size_t len = 1 + next(&rng) % RING_MAX;

	pthread_barrier_wait(&start);
	for (long i = 0; i < w->steps; i++) {
		size_t slot = next(&rng) % len, n;
		uint64_t r = next(&rng);

		if (w->ring[slot]) {
			free(w->ring[slot]);
			w->live--;
			w->live_bytes -= w->size[slot];
		}
		if (r % 1000 == 0)
			n = 65536 + (r >> 16) % (196608 + 1);
		else
			n = 1 + (r >> 16) % 2048;
		w->ring[slot] = stress_alloc(n);
		if (!w->ring[slot])
			abort();
		*(volatile char *)w->ring[slot] = 1;
		w->size[slot] = n;
		w->allocs++;
		w->bytes += n;
		w->live++;
		w->live_bytes += n;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 16;
	long pairs = argc > 2 ? atol(argv[2]) : 2000000;
	pthread_t th[MAX_THREADS];
	uint64_t allocs = 0, bytes = 0, live = 0, live_bytes = 0;
	char line[256];

	if (threads < 1 || threads > MAX_THREADS || pairs < threads)
		return 2;
	if (argc > 3) {
		if (write(1, "ready\n", 6) != 6)
			return 4;
		wait_line(argv[3]);
	}
	pthread_barrier_init(&start, NULL, threads);
	for (int t = 0; t < threads; t++) {
		workers[t].id = t;
		workers[t].steps = pairs / threads + (t < pairs % threads);
		if (pthread_create(&th[t], NULL, run, &workers[t]))
			return 3;
	}
	for (int t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		allocs += workers[t].allocs;
		bytes += workers[t].bytes;
		live += workers[t].live;
		live_bytes += workers[t].live_bytes;
	}
	int n = snprintf(line, sizeof(line), "stress: allocs %llu bytes %llu live %llu live_bytes %llu\n",
			 (unsigned long long)allocs, (unsigned long long)bytes, (unsigned long long)live,
			 (unsigned long long)live_bytes);
	return write(1, line, n) == n ? 0 : 4;
}
