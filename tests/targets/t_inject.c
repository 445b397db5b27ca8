/*
 * A self-checking target for the in-process fast path (scenario fastpath).
 *
 *   t_inject churn FIFO THREADS
 *       THREADS threads allocate and free all the time (malloc, calloc,
 *       realloc, posix_memalign, aligned_alloc, free; 16-2064 bytes), each
 *       block filled with a pattern of its own address and size that is
 *       checked before it is freed or resized, resting 100 us every 512
 *       operations (so that they do not take every core).  Prints "ready", then serves
 *       commands from FIFO, one a line:
 *         phase K   frees the previous phase's blocks, then allocates 100
 *                   blocks in phase_keep, malloc(1000 + K) each, kept, and
 *                   prints "phase K done"
 *         quit      stops the threads, checks every block, prints
 *                   "bye errors=N" and exits 0 when N is 0 (else 3)
 *       So a heaptrace attached before "phase K" and stopped after its
 *       "done" must count exactly 100 blocks, 100 x (1000 + K) bytes in
 *       use, under phase_keep, whatever the threads do meanwhile.
 *
 *   t_inject signals N [F]
 *       One thread: N rounds (and on until the handler ran 200 times) of
 *       malloc/free of 100-1123 bytes while a
 *       timer sends SIGALRM every 200 x F us (F: 1); the handler mallocs and frees 48
 *       bytes (a size the main loop never uses, served from its own tcache
 *       bin, so glibc takes no lock the interrupted code may hold) and
 *       checks its pattern.  Prints "main M handler H errors N" and exits 0
 *       when N is 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))
#define RING 32

static atomic_int stop;
static atomic_long errors;

static void fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(((uintptr_t)p >> 4) + n + i);
}

static int intact(const unsigned char *p, size_t n, size_t n_filled)
{
	for (size_t i = 0; i < n_filled && i < n; i++)
		if (p[i] != (unsigned char)(((uintptr_t)p >> 4) + n_filled + i))
			return 0;
	return 1;
}

struct blk {
	unsigned char *p;
	size_t n;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

NOINLINE static void *churn_alloc(uint64_t *s, size_t n)
{
	void *p = NULL;

	switch (rnd(s) % 5) {
	case 0:
		return calloc(1, n);
	case 1:
		return posix_memalign(&p, 64, n) ? NULL : p;
	case 2:
		return aligned_alloc(32, (n + 31) & ~(size_t)31);
	default:
		return malloc(n);
	}
}

static void *churn(void *arg)
{
	struct blk ring[RING] = { { 0 } };
	uint64_t s = (uintptr_t)arg * 2654435761u + 1;

	for (unsigned long op = 0; !atomic_load(&stop); op++) {
		struct blk *b = &ring[rnd(&s) % RING];

		/* A pause now and then: the threads allocate all the time without taking both cores. */
		if (!(op % 512))
			usleep(100);
		size_t n = 16 + rnd(&s) % 2049;

		if (b->p && !intact(b->p, b->n, b->n))
			atomic_fetch_add(&errors, 1);
		if (b->p && rnd(&s) % 4 == 0) {
			unsigned char *q = realloc(b->p, n);
			if (q) {
				/* What was kept is the old pattern: check it, then write the new one. */
				size_t kept = b->n < n ? b->n : n;
				for (size_t i = 0; i < kept; i++)
					if (q[i] != (unsigned char)(((uintptr_t)b->p >> 4) + b->n + i)) {
						atomic_fetch_add(&errors, 1);
						break;
					}
				b->p = q;
				b->n = n;
				fill(q, n);
			}
			continue;
		}
		free(b->p);
		b->p = churn_alloc(&s, n);
		b->n = b->p ? n : 0;
		if (b->p)
			fill(b->p, n);
	}
	for (int i = 0; i < RING; i++) {
		if (ring[i].p && !intact(ring[i].p, ring[i].n, ring[i].n))
			atomic_fetch_add(&errors, 1);
		free(ring[i].p);
	}
	return NULL;
}

static void *kept[100];

NOINLINE static void phase_keep(int k)
{
	for (int i = 0; i < 100; i++) {
		kept[i] = malloc(1000 + k);
		fill(kept[i], 1000 + k);
	}
}

NOINLINE static void phase_free(int k)
{
	for (int i = 0; i < 100; i++) {
		if (kept[i] && !intact(kept[i], 1000 + k, 1000 + k))
			atomic_fetch_add(&errors, 1);
		free(kept[i]);
		kept[i] = NULL;
	}
}

static int do_churn(const char *fifo, int nthreads)
{
	pthread_t th[64];
	char line[64], out[96];
	int prev = -1;

	if (nthreads < 1 || nthreads > 64)
		return 2;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 1));
	snprintf(out, sizeof(out), "pid %d\nready\n", getpid());
	say(out);
	for (;;) {
		int k;
		read_fifo_line(fifo, line, sizeof(line));
		if (sscanf(line, "phase %d", &k) == 1) {
			if (prev >= 0)
				phase_free(prev);
			phase_keep(k);
			prev = k;
			snprintf(out, sizeof(out), "phase %d done\n", k);
			say(out);
		} else if (!strcmp(line, "quit")) {
			break;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	if (prev >= 0)
		phase_free(prev);
	snprintf(out, sizeof(out), "bye errors=%ld\n", atomic_load(&errors));
	say(out);
	return atomic_load(&errors) ? 3 : 0;
}

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	(void)sig;
	unsigned char *p = malloc(48);
	if (p) {
		fill(p, 48);
		if (!intact(p, 48, 48))
			atomic_fetch_add(&errors, 1);
		free(p);
	}
	handled++;
}

/* At least n rounds, and on until the handler ran 200 times (at most 100 x n rounds). */
NOINLINE static long signal_loop(long n)
{
	long i;

	for (i = 0; (i < n || handled < 200) && i < 100 * n; i++) {
		size_t sz = 100 + (i % 1024);
		unsigned char *p = malloc(sz);
		if (!p)
			continue;
		fill(p, sz);
		if (!intact(p, sz, sz))
			atomic_fetch_add(&errors, 1);
		free(p);
	}
	return i;
}

static int do_signals(long n, long f)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 200 * f }, { 0, 200 * f } };
	char out[96];

	/* The handler's size class in this thread's tcache before the first signal. */
	free(malloc(48));
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	long rounds = signal_loop(n);
	it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
	snprintf(out, sizeof(out), "main %ld handler %ld errors %ld\n", rounds, (long)handled,
		 atomic_load(&errors));
	say(out);
	return atomic_load(&errors) ? 3 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "churn"))
		return do_churn(argv[2], atoi(argv[3]));
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "signals"))
		return do_signals(atol(argv[2]), argc == 4 && atol(argv[3]) > 0 ? atol(argv[3]) : 1);
	say("usage: t_inject churn FIFO THREADS | signals N [F]\n");
	return 2;
}
