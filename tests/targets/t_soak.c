/*
 * Long-running target for scenario_soak.  Usage: t_soak FIFO
 *
 * Prints "ready", then serves commands, one per line, each read from a new
 * open() of FIFO (it blocks there between phases: a quiescent point with no
 * heap activity at all):
 *   churn K   a churn phase: 20000 random operations on a table of 4096
 *             slots (malloc, calloc, realloc of a live slot, aligned_alloc,
 *             free; sizes 1-4096 bytes, one in 500 128-512 KiB, mmapped),
 *             seeded with K; odd phases lean to allocating, even phases to
 *             freeing, so the live set grows and shrinks.  Then it prints
 *             "live K OBJECTS BYTES": its own count of live blocks and
 *             their requested bytes.
 *   quit      prints "bye" and exits 0, leaving its live blocks allocated.
 * No stdio: every heap block of the process is in the table, so OBJECTS
 * and BYTES are the process's whole in-use heap.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))
#define SLOTS 4096
#define OPS 20000

static void *slot[SLOTS];
static size_t size[SLOTS];
static uint64_t live, live_bytes;

static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t pick_size(uint64_t r)
{
	if (r % 500 == 0)
		return 131072 + (r >> 20) % (393216 + 1);
	return 1 + (r >> 20) % 4096;
}

NOINLINE void soak_churn(unsigned long k)
{
	uint64_t rng = 0xabcdef12345ull ^ (k * 0x100000001b3ull);
	/* out of 8: odd phases allocate into an empty slot 6 times, even ones 2 */
	unsigned grow = k % 2 ? 6 : 2;

	for (int i = 0; i < OPS; i++) {
		uint64_t r = next(&rng);
		size_t s = r % SLOTS, n = pick_size(next(&rng));
		unsigned op = (r >> 32) % 8;
		void *p;

		if (!slot[s]) {
			if (op >= grow)
				continue;
			switch (op % 3) {
			case 0:
				p = malloc(n);
				break;
			case 1:
				p = calloc(1, n);
				break;
			default:
				p = aligned_alloc(64, (n + 63) & ~(size_t)63);
				n = (n + 63) & ~(size_t)63;
				break;
			}
			if (!p)
				abort();
			slot[s] = p;
			size[s] = n;
			live++;
			live_bytes += n;
		} else if (op < 3) {
			p = realloc(slot[s], n);
			if (!p)
				abort();
			slot[s] = p;
			live_bytes += n - size[s];
			size[s] = n;
		} else {
			free(slot[s]);
			slot[s] = NULL;
			live--;
			live_bytes -= size[s];
		}
	}
}

int main(int argc, char **argv)
{
	char cmd[128], line[128];

	if (argc != 2) {
		say("usage: t_soak FIFO\n");
		return 2;
	}
	say("ready\n");
	for (;;) {
		read_fifo_line(argv[1], cmd, sizeof(cmd));
		if (strncmp(cmd, "churn ", 6) == 0) {
			unsigned long k = strtoul(cmd + 6, NULL, 10);

			soak_churn(k);
			int n = snprintf(line, sizeof(line), "live %lu %llu %llu\n", k, (unsigned long long)live,
					 (unsigned long long)live_bytes);
			if (n > 0 && (size_t)n < sizeof(line))
				say(line);
		} else if (strcmp(cmd, "quit") == 0) {
			say("bye\n");
			return 0;
		}
	}
}
