/*
 * churn: the workload of heaptrace's overhead bench.
 *
 *   churn [--pairs N] [--live-set L] [--depth D] [--threads T] [--size S] [--fork]
 *       Each thread keeps a ring of L blocks; one iteration frees the oldest
 *       and mallocs a new S-byte block into its slot, at the bottom of D
 *       nested calls.  Prints "ns_per_pair X": wall time of the timed loop
 *       divided by the N pairs done by all threads together.  With --fork
 *       all of it runs in a forked child while the parent waits, as in a
 *       pre-fork server's worker.
 *
 *       With --pool the pair is pool_free(pool, ptr, S) and pool_alloc(pool,
 *       S) of a per-thread pool allocator instead: register arguments, leaf
 *       functions (its slots are carved out beforehand), the shape of a
 *       custom allocator traced with --sym (bench/run.sh's pool rows).
 *
 *   churn --live N --stacks K [--size S]
 *       Allocates N blocks from K distinct call stacks, prints "ready", and
 *       waits until killed: the workload for reading and writing a big profile.
 *
 * Deterministic: fixed sizes and a fixed order, no randomness, so runs differ
 * only by the machine's noise.  Built -O2 -fno-omit-frame-pointer, so that the
 * stacks the tracer walks are real frame-pointer chains of the stated depth.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * The nesting must survive the optimiser: no inlining, no cloning and, for
 * the two functions of the live mode, no identical-code folding (GCC's noipa
 * implies all three; clang folds no functions at -O2).
 */
#if defined(__clang__)
#define KEEP __attribute__((noinline))
#else
#define KEEP __attribute__((noipa))
#endif

/*
 * Code after a call keeps it out of tail position, so the compiler cannot turn
 * it into a jump (or the recursion into a loop) and drop the caller's frame.
 */
#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

#define WARMUP_PAIRS 10000

/*
 * A pool of fixed-size slots: a free list over one slab carved out before
 * the clock starts, so that neither function calls anything (leaves).
 */
struct pool_slot {
	struct pool_slot *next;
};

struct pool {
	char *slab;
	size_t next, cap, size;
	struct pool_slot *free;
};

KEEP void *pool_alloc(struct pool *p, size_t size)
{
	if (size > p->size)
		return NULL;
	if (p->free) {
		struct pool_slot *s = p->free;
		p->free = s->next;
		return s;
	}
	if (p->next == p->cap)
		return NULL;
	return p->slab + p->size * p->next++;
}

KEEP void pool_free(struct pool *p, void *ptr, size_t size)
{
	struct pool_slot *s = ptr;

	if (!s || size > p->size)
		return;
	s->next = p->free;
	p->free = s;
}

struct ring {
	void **slot;
	size_t n, next, size;
	struct pool *pool;      /* --pool: pool_alloc/pool_free instead of malloc/free */
};

/* The bottom frame: one free and one malloc, in that order. */
static KEEP void churn_once(struct ring *r)
{
	size_t i = r->next;

	if (r->pool) {
		pool_free(r->pool, r->slot[i], r->size);
		r->slot[i] = pool_alloc(r->pool, r->size);
	} else {
		free(r->slot[i]);
		r->slot[i] = malloc(r->size);
	}
	if (!r->slot[i]) {
		fprintf(stderr, "churn: out of memory\n");
		exit(1);
	}
	r->next = i + 1 == r->n ? 0 : i + 1;
	KEEP_FRAME();
}

/* levels frames of these, then churn_once. */
static KEEP void descend(struct ring *r, int levels)
{
	if (levels <= 1)
		churn_once(r);
	else
		descend(r, levels - 1);
	KEEP_FRAME();
}

/* One pair at the bottom of depth frames, churn_once included (inlined: no frame). */
static inline void churn_at(struct ring *r, int depth)
{
	if (depth <= 1)
		churn_once(r);
	else
		descend(r, depth - 1);
}

/* A cache line each: ring.next is written every pair, and must not be shared. */
struct worker {
	pthread_t thread;
	struct ring ring;
	size_t pairs;
	int depth;
	pthread_barrier_t *start;
} __attribute__((aligned(64)));

static void *work(void *arg)
{
	struct worker *w = arg;

	/* Fill the ring and warm the allocator's caches before the clock starts. */
	for (size_t i = 0; i < w->ring.n + WARMUP_PAIRS; i++)
		churn_at(&w->ring, w->depth);
	pthread_barrier_wait(w->start);
	for (size_t i = 0; i < w->pairs; i++)
		churn_at(&w->ring, w->depth);
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int run_churn(size_t pairs, size_t live_set, int depth, int threads, size_t size, int pooled)
{
	struct worker *w = aligned_alloc(64, threads * sizeof(*w));
	pthread_barrier_t start;

	if (!w)
		return 1;
	memset(w, 0, threads * sizeof(*w));
	pthread_barrier_init(&start, NULL, threads);
	for (int t = 0; t < threads; t++) {
		w[t].ring.slot = calloc(live_set, sizeof(void *));
		if (!w[t].ring.slot)
			return 1;
		w[t].ring.n = live_set;
		w[t].ring.size = size;
		if (pooled) {
			/* The ring holds live_set slots; one more is free between a free and its alloc. */
			struct pool *p = calloc(1, sizeof(*p));
			if (!p || !(p->slab = malloc((live_set + 1) * (size < 8 ? 8 : size))))
				return 1;
			p->cap = live_set + 1;
			p->size = size < 8 ? 8 : size;
			w[t].ring.pool = p;
		}
		w[t].depth = depth;
		w[t].start = &start;
		/* N is the total; thread 0 takes the remainder. */
		w[t].pairs = pairs / threads + (t == 0 ? pairs % threads : 0);
	}
	for (int t = 1; t < threads; t++) {
		int err = pthread_create(&w[t].thread, NULL, work, &w[t]);
		if (err) {
			fprintf(stderr, "churn: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}

	/*
	 * The main thread is worker 0 (so T=1 runs in the main arena, like most
	 * programs); it passes the barrier last or nearly so, then starts the clock.
	 */
	struct worker *w0 = &w[0];
	for (size_t i = 0; i < w0->ring.n + WARMUP_PAIRS; i++)
		churn_at(&w0->ring, w0->depth);
	pthread_barrier_wait(&start);
	double t0 = now_ns();
	for (size_t i = 0; i < w0->pairs; i++)
		churn_at(&w0->ring, w0->depth);
	for (int t = 1; t < threads; t++)
		pthread_join(w[t].thread, NULL);
	double t1 = now_ns();

	printf("ns_per_pair %.2f\n", (t1 - t0) / (double)pairs);
	fflush(stdout);
	return 0;
}

/*
 * Live mode.  Stack k goes through `levels` frames, each path_a or path_b as
 * the bits of k say, so K indices give K distinct return-address sequences.
 */
static KEEP void *path_b(unsigned k, int level, size_t size);

static KEEP void *leaf_alloc(size_t size)
{
	void *p = malloc(size);

	KEEP_FRAME();
	return p;
}

static KEEP void *path_a(unsigned k, int level, size_t size)
{
	void *p;

	if (level == 0)
		p = leaf_alloc(size);
	else if (k >> (level - 1) & 1)
		p = path_b(k, level - 1, size);
	else
		p = path_a(k, level - 1, size);
	KEEP_FRAME();
	return p;
}

static KEEP void *path_b(unsigned k, int level, size_t size)
{
	void *p;

	/* Not the same body as path_a, so that no linker or compiler folds the two. */
	if (level == 0)
		p = leaf_alloc(size);
	else if (!(k >> (level - 1) & 1))
		p = path_a(k, level - 1, size);
	else
		p = path_b(k, level - 1, size);
	KEEP_FRAME();
	return p;
}

static int run_live(size_t n, size_t stacks, size_t size)
{
	void **blocks = malloc((n ? n : 1) * sizeof(void *));
	int levels = 1;

	if (!blocks || !stacks)
		return 1;
	while (levels < 32 && ((size_t)1 << levels) < stacks)
		levels++;
	for (size_t i = 0; i < n; i++) {
		blocks[i] = path_a((unsigned)(i % stacks), levels, size);
		if (!blocks[i]) {
			fprintf(stderr, "churn: out of memory after %zu blocks\n", i);
			return 1;
		}
	}
	printf("ready %zu blocks from %zu stacks\n", n, stacks < n ? stacks : n);
	fflush(stdout);
	/* The blocks stay live until whoever measures us kills us. */
	for (;;)
		pause();
}

static size_t parse_size(const char *opt, const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);

	if (errno || *end || end == s) {
		fprintf(stderr, "churn: bad value for --%s: %s\n", opt, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pairs", required_argument, NULL, 'n' },
		{ "live-set", required_argument, NULL, 'l' },
		{ "depth", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "live", required_argument, NULL, 'L' },
		{ "stacks", required_argument, NULL, 'K' },
		{ "fork", no_argument, NULL, 'F' },
		{ "pool", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	size_t pairs = 200000, live_set = 1024, size = 64, live = 0, stacks = 1;
	int depth = 8, threads = 1, live_mode = 0, forked = 0, pooled = 0, c;

	while ((c = getopt_long(argc, argv, "n:l:d:t:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': pairs = parse_size("pairs", optarg); break;
		case 'l': live_set = parse_size("live-set", optarg); break;
		case 'd': depth = (int)parse_size("depth", optarg); break;
		case 't': threads = (int)parse_size("threads", optarg); break;
		case 's': size = parse_size("size", optarg); break;
		case 'L': live = parse_size("live", optarg); live_mode = 1; break;
		case 'K': stacks = parse_size("stacks", optarg); break;
		case 'F': forked = 1; break;
		case 'P': pooled = 1; break;
		case 'h':
			printf("usage: churn [--pairs N] [--live-set L] [--depth D] [--threads T] [--size S] [--fork] [--pool]\n"
			       "       churn --live N --stacks K [--size S]\n");
			return 0;
		default:
			return 2;
		}
	}
	/*
	 * A shell starts background jobs with SIGINT ignored; the bench stops a
	 * background churn with SIGINT (heaptrace passes it on to a command it
	 * launched), so take the default back.
	 */
	signal(SIGINT, SIG_DFL);
	if (live_mode)
		return run_live(live, stacks, size);
	if (!pairs || !live_set || depth < 1 || threads < 1 || threads > 1024) {
		fprintf(stderr, "churn: pairs, live-set and depth must be >= 1, threads 1..1024\n");
		return 2;
	}
	if (forked) {
		int st;
		pid_t child = fork();
		if (child < 0) {
			perror("churn: fork");
			return 1;
		}
		if (child > 0)
			return waitpid(child, &st, 0) == child && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	return run_churn(pairs, live_set, depth, threads, size, pooled);
}
