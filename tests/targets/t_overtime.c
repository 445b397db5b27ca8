/*
 * Target for heap-over-time checks: -i snapshots, --diff, heaptrace diff,
 * --at-peak, the -f top summary (temporary, peak, leaked, lifetimes).
 * Usage: t_overtime FIFO     phases released by the harness (see below)
 *        t_overtime -        the same phases back to back, no waiting
 *
 *   0. with a FIFO: blocks until a line is written to it (nothing allocated
 *      yet, so every snapshot taken now is empty).
 *   1. keep_fn: 4 x malloc(5000), kept.
 *      K1 = 6 ticks; a tick is leak_fn: malloc(1000), kept; churn_fn:
 *      malloc(1 MiB) and free at once; then a 100 ms sleep.
 *      Prints "phase1"; with a FIFO, blocks on it again (nothing changes
 *      while it waits, so a snapshot taken then is exact).
 *   2. drop_fn frees 3 of keep_fn's 4 blocks (each lived >= 6 x 100 ms).
 *      K2 = 10 ticks.  Prints "phase2" and exits 0.
 *
 * In use after phase 1: keep 4 / 20000, leak 6 / 6000, churn 0   = 26000
 * In use at the end:    keep 1 /  5000, leak 16 / 16000, churn 0 = 21000
 * Allocated at the end: keep 4 / 20000, leak 16 / 16000,
 *                       churn 16 / 16 x 1048576 = 16777216        -> 36 objects,
 *                       16813216 bytes
 * Peak (exact): in use rises by 1000 (leak) then 1048576 (churn) per tick;
 * the highest is phase 1's last churn: 20000 + 6000 + 1048576 = 1074576
 * (phase 2 gets to 5000 + 16000 + 1048576 = 1069576 only).
 * No stdio (say() writes directly), so nothing else allocates.  The "@site"
 * comments mark the call lines tests/run.sh looks for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

#define K1 6
#define K2 10
#define LEAK 1000
#define CHURN 1048576
#define KEEP_N 4
#define KEEP_SIZE 5000
#define DROP_N 3

void *volatile leaked[K1 + K2];
void *volatile kept[KEEP_N];
void *volatile churn_sink;

/* Block until a writer opens FIFO, read up to a newline or end of file. */
/* "-" runs the phases without waiting for the harness. */
static void wait_step(const char *fifo)
{
	if (strcmp(fifo, "-"))
		wait_line(fifo);
}

static void nap_100ms(void)
{
	struct timespec ts = { 0, 100000000 };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

NOINLINE void keep_fn(void)
{
	for (int i = 0; i < KEEP_N; i++)
		kept[i] = malloc(KEEP_SIZE); /* @site keep_fn */
}

NOINLINE void drop_fn(void)
{
	for (int i = 0; i < DROP_N; i++)
		free(kept[i]);
}

NOINLINE void leak_fn(int i)
{
	leaked[i] = malloc(LEAK); /* @site leak_fn */
	if (leaked[i] == NULL)
		_exit(3);
}

NOINLINE void churn_fn(void)
{
	churn_sink = malloc(CHURN); /* @site churn_fn */
	if (churn_sink == NULL)
		_exit(3);
	free(churn_sink);
}

static void tick(int i)
{
	leak_fn(i);
	churn_fn();
	nap_100ms();
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		say("usage: t_overtime FIFO|-\n");
		return 2;
	}
	/* One loop, so that each function has one stack in both phases. */
	for (int phase = 1; phase <= 2; phase++) {
		wait_step(argv[1]);
		if (phase == 1)
			keep_fn();
		else
			drop_fn();
		for (int i = phase == 1 ? 0 : K1; i < (phase == 1 ? K1 : K1 + K2); i++)
			tick(i);
		say(phase == 1 ? "phase1\n" : "phase2\n");
	}
	return 0;
}
