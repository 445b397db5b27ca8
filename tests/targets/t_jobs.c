/*
 * Targets for the signals area (tests/scenarios/signals.sh holds the
 * expected numbers): a command that heaptrace's stop signals and job
 * control (SIGSTOP, SIGTSTP, SIGCONT) reach while it waits on a FIFO.
 * No stdio: every heap block of the process is one of these.
 *
 *   every mode first:
 *       job_keep: 4 x malloc(1000), kept
 *       job_temp: 1 x malloc(500), freed
 *
 *   t_jobs hold FIFO [catch]
 *       prints "ready", blocks until a line is written to FIFO, then
 *       job_after: 3 x malloc(300), kept; prints "bye", exits 7.  With
 *       "catch", SIGHUP, SIGINT and SIGTERM are caught, not fatal, and
 *       "signals: NAME..." (those received, in that order) precedes "bye".
 *
 *   t_jobs wide FIFO
 *       wide_leaf: 1 x malloc(16) kept under each of 1024 different call
 *       chains (wide_zero or wide_one for each of the 10 bits of 0..1023,
 *       a wide_next between them), so that the collapsed profile is far
 *       larger than a pipe's 64 KiB; then as hold.
 *
 *   t_jobs fork FIFO
 *       prints "ready", blocks until a line is written to FIFO, then
 *       forks.  The child: child_keep 2 x malloc(2000), kept; prints
 *       "child ready", blocks until the next line, prints "child bye",
 *       exits 0.  The parent waits for it (exit status 0, or it exits 9),
 *       then job_after, "bye", exit 7.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

void *volatile keep[4], *volatile temp, *volatile after[3], *volatile child_blocks[2];
void *volatile wide_blocks[1024];
volatile int wide_n;
volatile sig_atomic_t caught;   /* bit per signal received (catch) */

NOINLINE void job_keep(void)
{
	for (int i = 0; i < 4; i++)
		keep[i] = malloc(1000);
}

NOINLINE void job_temp(void)
{
	temp = malloc(500);
	free(temp);
}

NOINLINE void job_after(void)
{
	for (int i = 0; i < 3; i++)
		after[i] = malloc(300);
}

NOINLINE void child_keep(void)
{
	for (int i = 0; i < 2; i++)
		child_blocks[i] = malloc(2000);
}

NOINLINE void wide_leaf(void)
{
	wide_blocks[wide_n++] = malloc(16);
}

NOINLINE void wide_zero(int depth, unsigned path);
NOINLINE void wide_one(int depth, unsigned path);

/* One frame per bit of path, the lowest first: a distinct call chain per path. */
static void wide_next(int depth, unsigned path)
{
	if (!depth)
		wide_leaf();
	else if (path & 1)
		wide_one(depth - 1, path >> 1);
	else
		wide_zero(depth - 1, path >> 1);
}

NOINLINE void wide_zero(int depth, unsigned path)
{
	wide_next(depth, path);
}

NOINLINE void wide_one(int depth, unsigned path)
{
	wide_next(depth, path);
}

static void on_signal(int sig)
{
	caught |= 1 << sig;
}

static void say_caught(void)
{
	static const int sigs[] = { SIGHUP, SIGINT, SIGTERM };
	static const char *const names[] = { " HUP", " INT", " TERM" };

	say("signals:");
	for (int i = 0; i < 3; i++)
		if (caught & (1 << sigs[i]))
			say(names[i]);
	say("\n");
}

static int do_hold(const char *fifo, int catch)
{
	if (catch) {
		struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
		sigaction(SIGHUP, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	say("ready\n");
	wait_line(fifo);
	job_after();
	if (catch)
		say_caught();
	say("bye\n");
	return 7;
}

static int do_fork(const char *fifo)
{
	int st;

	say("ready\n");
	wait_line(fifo);
	pid_t pid = fork();
	if (pid < 0)
		return 8;
	if (pid == 0) {
		child_keep();
		say("child ready\n");
		wait_line(fifo);
		say("child bye\n");
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 9;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 9;
	job_after();
	say("bye\n");
	return 7;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	job_keep();
	job_temp();
	if (!strcmp(argv[1], "hold"))
		return do_hold(argv[2], argc > 3 && !strcmp(argv[3], "catch"));
	if (!strcmp(argv[1], "wide")) {
		for (unsigned path = 0; path < 1024; path++)
			wide_next(10, path);
		return do_hold(argv[2], 0);
	}
	if (!strcmp(argv[1], "fork"))
		return do_fork(argv[2]);
	return 2;
}
