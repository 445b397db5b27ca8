/*
 * Target for scenario_undelivered.  Usage: t_trickle N
 *
 * trickle_alloc: N x malloc(64), one every 10 ms, each freed at once by
 * trickle_free; then exits 0.  No stdio: the traced heap is exactly N
 * allocations and N frees, spread over N x 10 ms (a run long enough for
 * heaptrace's check that the fast path's recorded calls arrive, at a
 * second after the first).
 */
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static NOINLINE void *trickle_alloc(void)
{
	return malloc(64);
}

static NOINLINE void trickle_free(void *p)
{
	free(p);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 300;
	struct timespec ten_ms = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < n; i++) {
		void *p = trickle_alloc();
		/* volatile: the compiler may not pair them away */
		*(volatile char *)p = (char)i;
		trickle_free(p);
		nanosleep(&ten_ms, NULL);
	}
	return 0;
}
