/*
 * Target for the "temporary" count, heaptrack's definition: a free is
 * temporary when it comes right after an allocation of the same stack and
 * size, with no other allocation or free in between (on its thread, for
 * heaptrace).  Each pattern has its own call lines, so each has its own
 * stack, and heaptrack_print must agree with heaptrace site by site.
 * Usage: t_temporary            the single-threaded patterns
 *        t_temporary threads    the threaded pattern only (see thr_fn)
 *        t_temporary coroutine  a thread whose first allocation is made
 *                               on a makecontext stack (see co_fn)
 *
 *   first_fn    1 x malloc(8), kept                              0 temporary
 *   churn_fn  100 x malloc(32), free                           100
 *   pair_fn    10 x a = malloc(48), b = malloc(64), free a, free b
 *                   (b comes between a and its free; free a ends b's turn)
 *                                                    a: 0, b: 0
 *   lifo_fn    10 x a = malloc(48), b = malloc(64), free b, free a
 *                                                    a: 0, b: 10
 *   batch_fn    5 x 8 x malloc(24) from one line, then their 8 frees in
 *                   order: the first free follows an allocation of the same
 *                   stack and size (the 8th), so it is temporary, though
 *                   it is not that block                            5
 *   realloc_fn 10 x p = malloc(16), p = realloc(p, 100000), free p
 *                   (a realloc is a free, then an allocation)
 *                                                    malloc: 10, realloc: 10
 *   calloc_fn  10 x calloc(4, 8), free                          10
 *   reallocnull_fn 10 x realloc(NULL, 200), free                10
 *   memalign_fn 10 x posix_memalign(64, 256), free              10
 *   nullfree_fn 10 x p = malloc(40), free(NULL), free p
 *                   (free(NULL) is no event)                    10
 *                                                  total:      175
 *
 * threads: worker and main take turns, in this order, 10 times:
 *   worker thr_fn: p = malloc(56); main side_fn: q = malloc(72);
 *   worker: free p; main: free q.
 * Per thread (heaptrace): each free follows its own thread's last
 * allocation: thr_fn 10, side_fn 10.  In one global order (heaptrack):
 * free p follows q's allocation, free q follows free p: 0 and 0.
 *
 * coroutine: a new thread's first allocation, co_fn's malloc(88), is made
 * on a coroutine's stack (mmap'd, no malloc), whose walk the stub leaves to
 * the BPF side (a record site, after the ring it waits for); the thread
 * frees it right after, on its own stack (through the ring in exact mode):
 * temporary 1, the one free of the run that follows its thread's
 * allocation (the record site and the drain must keep one last allocation
 * for the thread).
 *
 * No stdio, so nothing else allocates (pthread_create's own allocations are
 * in libc's frames, not in these functions).  The "@site" comments mark the
 * call lines tests/scenarios/temporary.sh looks for.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))

#define CHURN 100
#define ROUNDS 10
#define BATCHES 5
#define BATCH 8

void *volatile kept, *volatile sink_a, *volatile sink_b;
void *volatile batch[BATCH];

static void *must(void *p)
{
	if (!p)
		exit(3);
	return p;
}

NOINLINE void first_fn(void)
{
	kept = must(malloc(8)); /* @site first */
}

NOINLINE void churn_fn(void)
{
	for (int i = 0; i < CHURN; i++) {
		sink_a = must(malloc(32)); /* @site churn */
		free(sink_a);
	}
}

NOINLINE void pair_fn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		sink_a = must(malloc(48)); /* @site pair_a */
		sink_b = must(malloc(64)); /* @site pair_b */
		free(sink_a);
		free(sink_b);
	}
}

NOINLINE void lifo_fn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		sink_a = must(malloc(48)); /* @site lifo_a */
		sink_b = must(malloc(64)); /* @site lifo_b */
		free(sink_b);
		free(sink_a);
	}
}

NOINLINE void batch_fn(void)
{
	for (int r = 0; r < BATCHES; r++) {
		for (int i = 0; i < BATCH; i++)
			batch[i] = must(malloc(24)); /* @site batch */
		for (int i = 0; i < BATCH; i++)
			free(batch[i]);
	}
}

NOINLINE void realloc_fn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		sink_a = must(malloc(16)); /* @site realloc_m */
		sink_a = must(realloc(sink_a, 100000)); /* @site realloc_r */
		free(sink_a);
	}
}

NOINLINE void calloc_fn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		sink_a = must(calloc(4, 8)); /* @site calloc */
		free(sink_a);
	}
}

NOINLINE void reallocnull_fn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		sink_a = must(realloc(NULL, 200)); /* @site reallocnull */
		free(sink_a);
	}
}

NOINLINE void memalign_fn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		void *p = NULL;
		if (posix_memalign(&p, 64, 256)) /* @site memalign */
			exit(3);
		sink_a = p;
		free(sink_a);
	}
}

NOINLINE void nullfree_fn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		sink_a = must(malloc(40)); /* @site nullfree */
		free(NULL);
		free(sink_a);
	}
}

/* The threaded pattern's turns: each side waits for the other's step. */
static sem_t worker_allocated, main_allocated, worker_freed, main_freed;

static void wait_sem(sem_t *s)
{
	while (sem_wait(s))
		;
}

NOINLINE void *thr_fn(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		void *p = must(malloc(56)); /* @site thr */
		sem_post(&worker_allocated);
		wait_sem(&main_allocated);
		free(p);
		sem_post(&worker_freed);
		wait_sem(&main_freed);
	}
	return NULL;
}

NOINLINE void side_fn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		wait_sem(&worker_allocated);
		sink_b = must(malloc(72)); /* @site side */
		sem_post(&main_allocated);
		wait_sem(&worker_freed);
		free(sink_b);
		sem_post(&main_freed);
	}
}

static void threads(void)
{
	pthread_t t;

	if (sem_init(&worker_allocated, 0, 0) || sem_init(&main_allocated, 0, 0) ||
	    sem_init(&worker_freed, 0, 0) || sem_init(&main_freed, 0, 0))
		exit(3);
	if (pthread_create(&t, NULL, thr_fn, NULL))
		exit(3);
	side_fn();
	pthread_join(t, NULL);
}

static ucontext_t co_main, co_ctx;

NOINLINE void co_fn(void)
{
	sink_a = must(malloc(88)); /* @site co */
}

static void *co_thread(void *arg)
{
	(void)arg;
	size_t size = 64 * 1024;
	void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED || getcontext(&co_ctx))
		exit(3);
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = size;
	co_ctx.uc_link = &co_main;
	makecontext(&co_ctx, co_fn, 0);
	if (swapcontext(&co_main, &co_ctx))
		exit(3);
	free(sink_a);
	munmap(stack, size);
	return NULL;
}

static void coroutine(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, co_thread, NULL) || pthread_join(t, NULL))
		exit(3);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "coroutine")) {
		coroutine();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "threads")) {
		threads();
		return 0;
	}
	first_fn();
	churn_fn();
	pair_fn();
	lifo_fn();
	batch_fn();
	realloc_fn();
	calloc_fn();
	reallocnull_fn();
	memalign_fn();
	nullfree_fn();
	return 0;
}
