/*
 * Target for scenario_sample (--sample-rate): a deterministic churn of
 * about 234,000 allocations, 1.9 GB, whose sampled estimates are checked
 * against the exact counts.  Usage: t_sample [FIFO]
 *
 * 200 rounds; each calls, interleaved:
 *   s_small  500 x posix_memalign(16, 1 KiB .. 4 KiB): glibc's calls malloc
 *            inside, a nested probe that must not be counted twice
 *   s_fixed  300 x calloc(4, 1000)
 *   s_medium 150 x realloc(NULL, 8 KiB .. 24 KiB): glibc's jumps to malloc
 *   s_large   20 x malloc(64 KiB .. 192 KiB), sizes around the sample rate
 *   s_grow   100 x malloc(2000), then realloc to 6000 (2 allocations)
 *   s_huge     1 x malloc(1 MiB)
 * Sizes come from a fixed-seed PRNG.  Every fourth call of each function
 * keeps its block to the end; the others free it at once.  Nothing else
 * allocates (no stdio), so the exact profile is what the target prints at
 * the end, one line per function (write(2)):
 *   FN allocs N bytes N live N live_bytes N
 * = alloc_objects, alloc_space, inuse_objects, inuse_space of the stacks
 * whose innermost frame is FN.  With FIFO it then prints "ready" and waits
 * for a line on FIFO before it exits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))
#define ROUNDS 200
#define MAX_KEPT 60000

struct stats {
	const char *name;
	uint64_t calls, allocs, bytes, live, live_bytes;
};

enum { SMALL, FIXED, MEDIUM, LARGE, GROW, HUGE, NFN };

static struct stats st[NFN] = {
	[SMALL] = { "s_small" }, [FIXED] = { "s_fixed" }, [MEDIUM] = { "s_medium" },
	[LARGE] = { "s_large" }, [GROW] = { "s_grow" }, [HUGE] = { "s_huge" },
};

static void *kept[MAX_KEPT];
static size_t nkept;
static uint64_t seed = 20240907;

/* splitmix64 */
static uint64_t rnd(void)
{
	uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void out_of_memory(void)
{
	say("t_sample: out of memory\n");
	_exit(1);
}

/* Count one block of fn's; keep it if it is the fourth call's, else free it. */
static void done(int fn, void *p, size_t size)
{
	struct stats *s = &st[fn];

	if (!p)
		out_of_memory();
	s->allocs++;
	s->bytes += size;
	if (s->calls++ % 4 == 0 && nkept < MAX_KEPT) {
		kept[nkept++] = p;
		s->live++;
		s->live_bytes += size;
	} else {
		free(p);
	}
}

NOINLINE void s_small(void)
{
	size_t size = 1024 + rnd() % 3072;
	void *p = NULL;

	if (posix_memalign(&p, 16, size))
		out_of_memory();
	done(SMALL, p, size);
}

NOINLINE void s_fixed(void)
{
	done(FIXED, calloc(4, 1000), 4000);
}

NOINLINE void s_medium(void)
{
	size_t size = 8192 + rnd() % 16384;

	done(MEDIUM, realloc(NULL, size), size);
}

NOINLINE void s_large(void)
{
	size_t size = 65536 + rnd() % 131072;

	done(LARGE, malloc(size), size);
}

/* Two allocations: the malloc'd block is freed by the realloc, which makes the one that stays. */
NOINLINE void s_grow(void)
{
	void *p = malloc(2000), *q;

	if (!p)
		out_of_memory();
	st[GROW].allocs++;
	st[GROW].bytes += 2000;
	q = realloc(p, 6000);
	done(GROW, q, 6000);
}

NOINLINE void s_huge(void)
{
	done(HUGE, malloc(1 << 20), 1 << 20);
}

int main(int argc, char **argv)
{
	char line[160];

	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < 500; i++) {
			s_small();
			if (i % 5 < 3)
				s_fixed();
			if (i % 10 < 3)
				s_medium();
			if (i % 25 == 0)
				s_large();
			if (i % 5 == 0)
				s_grow();
		}
		s_huge();
	}
	for (int f = 0; f < NFN; f++) {
		snprintf(line, sizeof(line), "%s allocs %lu bytes %lu live %lu live_bytes %lu\n", st[f].name,
			 (unsigned long)st[f].allocs, (unsigned long)st[f].bytes, (unsigned long)st[f].live,
			 (unsigned long)st[f].live_bytes);
		say(line);
	}
	if (argc > 1) {
		say("ready\n");
		wait_line(argv[1]);
	}
	return 0;
}
