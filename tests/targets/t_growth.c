/*
 * Target for heaptrace diff --growth and -i.  Usage: t_growth TICKS [MS]
 *
 * Runs TICKS ticks, then exits without freeing anything (the final profile
 * is then what a snapshot after tick TICKS holds).  Per tick:
 *   grow_fn: malloc(1000), kept: in use 1000 x TICKS (unbounded)
 *   cap_fn:  malloc(4096) in the first 3 ticks only: in use 4096 x min(TICKS, 3)
 *   churn_fn: malloc(512), freed at once: in use 0
 * With MS, it sleeps MS milliseconds after each tick (for -i snapshots).
 * No stdio, so nothing else allocates.
 */
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define MAX_TICKS 64
#define CAP_TICKS 3

void *volatile kept[2 * MAX_TICKS];
static int nkept;

NOINLINE void grow_fn(void)
{
	kept[nkept++] = malloc(1000);
}

NOINLINE void cap_fn(void)
{
	static int n;
	if (n++ < CAP_TICKS)
		kept[nkept++] = malloc(4096);
}

NOINLINE void churn_fn(void)
{
	void *volatile p = malloc(512);
	free(p);
}

int main(int argc, char **argv)
{
	int ticks = argc > 1 ? atoi(argv[1]) : 0;
	int ms = argc > 2 ? atoi(argv[2]) : 0;
	struct timespec nap = { ms / 1000, (ms % 1000) * 1000000L };

	if (ticks < 1 || ticks > MAX_TICKS)
		return 2;
	for (int i = 0; i < ticks; i++) {
		grow_fn();
		cap_fn();
		churn_fn();
		if (ms > 0)
			nanosleep(&nap, NULL);
	}
	return 0;
}
