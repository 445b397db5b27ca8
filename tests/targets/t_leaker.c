/*
 * Target for heaptrace --http -p.  Usage: t_leaker FIFO
 *
 * Prints "ready", then reads commands from FIFO, one line at a time (the
 * FIFO is reopened at end of file, so every writer may send one line):
 *   "leak": one step:
 *             leak_fn:  3 x malloc(12345), kept for ever  (+37035 bytes)
 *             churn_fn: 2 x malloc(777), each freed at once, by churn_one
 *                       inlined into churn_fn
 *           then prints "step N".
 *   "quit": prints "bye" and exits 0.
 * Blocking is in open()/read() on the FIFO: no CPU is burnt, and nothing
 * allocates but leak_fn and churn_fn (no stdio), so after attaching at
 * "ready" and K steps the traced heap is exactly:
 *   in use:    3K objects, 37035K bytes (leak_fn)
 *   allocated: 5K objects, 37035K + 1554K bytes; frees 2K
 *   peak in use: 37035K + 777 (the first churn block of the last step).
 * tests/run.sh (scenario_proto) holds the expected numbers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

#define LEAK_N 3
#define LEAK_SIZE 12345
#define CHURN_N 2
#define CHURN_SIZE 777
#define MAX_LEAKS 4096

void *volatile leaks[MAX_LEAKS];
void *volatile churn_sink;
static int nleaks;

/* "step N\n" without stdio (which could allocate). */
static void say_step(int n)
{
	char buf[32];
	int i = (int)sizeof(buf) - 1;

	buf[i] = '\0';
	buf[--i] = '\n';
	do {
		buf[--i] = (char)('0' + n % 10);
		n /= 10;
	} while (n > 0 && i > 6);
	buf[--i] = ' ';
	memcpy(buf + i - 4, "step", 4);
	say(buf + i - 4);
}

NOINLINE void leak_fn(void)
{
	for (int i = 0; i < LEAK_N && nleaks < MAX_LEAKS; i++) {
		leaks[nleaks] = malloc(LEAK_SIZE); /* @site leak_fn */
		if (leaks[nleaks] == NULL)
			_exit(3);
		nleaks++;
	}
}

/* Inlined even with -fno-inline: its malloc call is one location of two
 * lines in the profile, churn_one (innermost) then churn_fn. */
static inline __attribute__((always_inline)) void churn_one(void)
{
	churn_sink = malloc(CHURN_SIZE); /* @site churn_one */
	if (churn_sink == NULL)
		_exit(3);
	free(churn_sink);
}

NOINLINE void churn_fn(void)
{
	for (int i = 0; i < CHURN_N; i++)
		churn_one(); /* @site churn_fn */
}

int main(int argc, char **argv)
{
	char cmd[64];
	int steps = 0;

	if (argc != 2) {
		say("usage: t_leaker FIFO\n");
		return 2;
	}
	say("ready\n");
	for (;;) {
		read_fifo_line(argv[1], cmd, sizeof(cmd));
		if (strcmp(cmd, "quit") == 0)
			break;
		if (strcmp(cmd, "leak") == 0) {
			leak_fn();
			churn_fn();
			steps++;
			say_step(steps);
		}
	}
	say("bye\n");
	return 0;
}
