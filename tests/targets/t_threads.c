/*
 * NTHREADS threads (argv[1] if given, at most MAXTHREADS) released together
 * by a barrier, racing through the allocator, and held by a second one until
 * all are done: a thread that exited early would hand its arena to one that
 * had not yet allocated, and glibc would stash the chunks the first left in
 * its bins into the second's tcache (more frees at that thread's exit, as
 * many as the scheduling decides).  Each thread:
 *   - thr_churn:   CHURN x malloc(48), each freed at once
 *   - thr_rseed / thr_realloc: RCHAIN x (malloc(32) grown by realloc to 96),
 *                  then freed
 *   - thr_keep:    KEEP x malloc(64), kept until exit
 *   - thr_handoff: HANDOFF x malloc(200), freed by the main thread after join
 * No stdio: the only other heap activity is glibc's own (thread DTVs), which
 * is attributed to glibc functions.  tests/run.sh holds the expected numbers.
 */
#include <pthread.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

#define NTHREADS 4
#define MAXTHREADS 16
#define CHURN 5000
#define RCHAIN 500
#define KEEP 50
#define HANDOFF 25

static pthread_barrier_t start, done;
static int nthreads = NTHREADS;
void *volatile keep[MAXTHREADS][KEEP];
void *volatile handoff[MAXTHREADS][HANDOFF];

NOINLINE void *thr_churn(void)
{
	return malloc(48);
}

NOINLINE void *thr_rseed(void)
{
	return malloc(32);
}

NOINLINE void *thr_realloc(void *p)
{
	return realloc(p, 96);
}

NOINLINE void *thr_keep(void)
{
	return malloc(64);
}

NOINLINE void *thr_handoff(void)
{
	return malloc(200);
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;

	pthread_barrier_wait(&start);
	for (int i = 0; i < CHURN; i++) {
		void *volatile churn = thr_churn();  /* per thread: no sharing */

		free(churn);
		if (i < RCHAIN) {
			void *p = thr_rseed();
			p = thr_realloc(p);
			free(p);
		}
		if (i < KEEP)
			keep[t][i] = thr_keep();
		if (i < HANDOFF)
			handoff[t][i] = thr_handoff();
	}
	pthread_barrier_wait(&done);
	return NULL;
}

NOINLINE void main_free_handoff(void)
{
	for (int t = 0; t < nthreads; t++)
		for (int i = 0; i < HANDOFF; i++)
			free(handoff[t][i]);
}

int main(int argc, char **argv)
{
	pthread_t th[MAXTHREADS];

	if (argc > 1)
		nthreads = atoi(argv[1]);
	if (nthreads < 1 || nthreads > MAXTHREADS)
		return 2;
	pthread_barrier_init(&start, NULL, nthreads);
	pthread_barrier_init(&done, NULL, nthreads);
	for (long t = 0; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)t) != 0)
			return 1;
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	main_free_handoff();
	return 0;
}
