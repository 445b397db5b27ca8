/*
 * The cost of a context reset under heaptrace --reset-sym (bench/run.sh):
 * a PostgreSQL-style context allocator whose reset frees every block of a
 * context at once.  OTHERS blocks stay live in ARENAS other contexts (the
 * tracer's arena maps hold them all), then:
 *
 *   empty_ns_per_call  CALLS resets of a context with no blocks
 *   live_ns_per_call   CALLS resets of a context holding LIVE blocks from
 *                      4 call sites (4 stacks), refilled before each reset
 *                      (the refill is not timed)
 *
 * Only the reset calls are timed, in the thread's CPU time (a uprobe's
 * handler runs in the thread), so the tracer's start-up, the others'
 * allocation, the refills and other tasks' turns are not counted.
 *
 * usage: resets [--others N] [--arenas N] [--calls N] [--live N]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define CHUNK ((size_t)65536)

struct chunk {
	struct chunk *next;
	size_t pad;
	unsigned char data[];
};

typedef struct ctx {
	struct chunk *first, *current;
	unsigned char *cur, *end;
} ctx_t;

void *volatile sink;

static void use_chunk(ctx_t *c, struct chunk *k)
{
	c->current = k;
	c->cur = k->data;
	c->end = k->data + CHUNK;
}

NOINLINE void *ctx_alloc(ctx_t *c, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	for (;;) {
		if (c->current && c->cur + size <= c->end) {
			void *p = c->cur;
			c->cur += size;
			return p;
		}
		if (c->current && c->current->next) {
			use_chunk(c, c->current->next);
			continue;
		}
		struct chunk *k = malloc(sizeof(*k) + CHUNK);
		if (!k)
			exit(2);
		k->next = NULL;
		if (c->current)
			c->current->next = k;
		else
			c->first = k;
		use_chunk(c, k);
	}
}

NOINLINE void ctx_reset(ctx_t *c)
{
	if (c->first)
		use_chunk(c, c->first);
}

/* Four call sites: the context's blocks come from four stacks, as a query's tuples from a few. */
NOINLINE void fill(ctx_t *c, long n)
{
	for (long i = 0; i < n; i++) {
		switch (i & 3) {
		case 0: sink = ctx_alloc(c, 32); break;
		case 1: sink = ctx_alloc(c, 48); break;
		case 2: sink = ctx_alloc(c, 64); break;
		default: sink = ctx_alloc(c, 16); break;
		}
	}
}

static double now_ns(void)
{
	struct timespec ts;

	/* The thread's CPU time, probes included: on a loaded machine wall time counts other tasks' turns. */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long others = 60000, arenas = 600, calls = 5000, live = 64;

	for (int i = 1; i + 1 < argc; i += 2) {
		long v = strtol(argv[i + 1], NULL, 10);
		if (!strcmp(argv[i], "--others"))
			others = v;
		else if (!strcmp(argv[i], "--arenas"))
			arenas = v;
		else if (!strcmp(argv[i], "--calls"))
			calls = v;
		else if (!strcmp(argv[i], "--live"))
			live = v;
		else {
			fprintf(stderr, "resets: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (arenas < 1 || calls < 1 || others < 0 || live < 0) {
		fprintf(stderr, "resets: bad arguments\n");
		return 2;
	}

	ctx_t *other = calloc(arenas, sizeof(*other)), empty = { 0 }, full = { 0 };
	if (!other)
		return 2;
	for (long i = 0; i < others; i++)
		sink = ctx_alloc(&other[i % arenas], 24);

	double t = now_ns();
	for (long i = 0; i < calls; i++)
		ctx_reset(&empty);
	double empty_ns = (now_ns() - t) / calls;

	double live_ns = 0;
	for (long i = 0; i < calls; i++) {
		fill(&full, live);
		t = now_ns();
		ctx_reset(&full);
		live_ns += now_ns() - t;
	}
	printf("empty_ns_per_call %.1f\nlive_ns_per_call %.1f\n", empty_ns, live_ns / calls);
	return 0;
}
