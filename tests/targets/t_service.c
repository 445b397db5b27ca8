/*
 * A pre-fork service already running when heaptrace comes (--cgroup, -p
 * PID,PID, -p PID --follow-fork), with allocations known per process.
 *   parent:   svc_parent  2 x 1000 kept, svc_base 1 x (BASE + 1) * 10 kept
 *   worker i: svc_worker  3 x 2000 kept, svc_id   1 x (BASE + i + 1) * 100 kept
 * Every process forks first (the parent its K workers), says
 * "ready PID BYTES" (BYTES: what it will allocate), waits for SIGUSR1,
 * allocates, says "done PID", and waits for SIGTERM; the parent then ends
 * its workers.  One write per line (lines from several processes do not mix).
 * Usage: t_service K [BASE]
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

void *volatile held[8];

NOINLINE void svc_parent(void)
{
	for (int i = 0; i < 2; i++)
		held[i] = malloc(1000);
}

NOINLINE void svc_base(int base) { held[2] = malloc((size_t)(base + 1) * 10); }

NOINLINE void svc_worker(void)
{
	for (int i = 0; i < 3; i++)
		held[3 + i] = malloc(2000);
}

NOINLINE void svc_id(int n) { held[6] = malloc((size_t)n * 100); }

static void line(const char *what, long a, long b)
{
	char buf[64], num[24];
	size_t n = 0;

	for (const char *s = what; *s;)
		buf[n++] = *s++;
	for (int k = 0; k < (b >= 0 ? 2 : 1); k++) {
		long v = k ? b : a;
		int m = 0;
		buf[n++] = ' ';
		do
			num[m++] = (char)('0' + v % 10);
		while ((v /= 10));
		while (m)
			buf[n++] = num[--m];
	}
	buf[n++] = '\n';
	buf[n] = 0;
	say(buf);
}

static int wait_for(int sig)
{
	sigset_t s;
	int got = 0;

	sigemptyset(&s);
	sigaddset(&s, sig);
	sigwait(&s, &got);
	return got;
}

int main(int argc, char **argv)
{
	int k = argc > 1 ? atoi(argv[1]) : 3, base = argc > 2 ? atoi(argv[2]) : 0, me = -1;
	pid_t kids[16];
	sigset_t s;

	if (k < 0 || k > 16)
		return 2;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGTERM);
	sigprocmask(SIG_BLOCK, &s, NULL);
	for (int i = 0; i < k && me < 0; i++) {
		pid_t p = fork();
		if (p < 0)
			return 3;
		if (p == 0)
			me = i;
		else
			kids[i] = p;
	}
	line("ready", getpid(), me < 0 ? 2000 + (base + 1) * 10 : 6000 + (base + me + 1) * 100);
	wait_for(SIGUSR1);
	if (me < 0) {
		svc_parent();
		svc_base(base);
	} else {
		svc_worker();
		svc_id(base + me + 1);
	}
	line("done", getpid(), -1);
	wait_for(SIGTERM);
	if (me < 0) {
		for (int i = 0; i < k; i++)
			kill(kids[i], SIGTERM);
		for (int i = 0; i < k; i++)
			waitpid(kids[i], NULL, 0);
	}
	return 0;
}
