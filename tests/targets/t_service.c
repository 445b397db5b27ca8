/*
 * A pre-fork service already running when heaptrace comes (--cgroup, -p
 * PID,PID, -p PID --follow-fork), with allocations known per process.
 *   parent:   svc_parent  2 x 1000 kept, svc_base 1 x (BASE + 1) * 10 kept
 *   worker i: svc_worker  3 x 2000 kept, svc_id   1 x (BASE + i + 1) * 100 kept
 * Every process forks first (the parent its K workers), says
 * "ready PID BYTES" (BYTES: what it will allocate), waits for SIGUSR1,
 * allocates, says "done PID", and waits for SIGTERM; the parent then ends
 * its workers.  One write per line (lines from several processes do not mix).
 * With "seccomp", a seccomp filter (inherited by the workers) first makes
 * memfd_create fail with EPERM, as a sandboxed service's would: heaptrace
 * cannot map its stub there (its first remote call, an anonymous mmap,
 * still works); the process checks that the filter holds.
 * With "late", the parent forks its workers only at SIGUSR1 (after
 * heaptrace attached): each then says "ready", allocates and says "done"
 * at once (a process adopted running whose children are forked later).
 * Usage: t_service K [BASE [seccomp|late]]
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

/* memfd_create: EPERM; every other call allowed (x86-64 only: another ABI is killed). */
static int refuse_memfd(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	/* The filter holds: the call fails as heaptrace's will. */
	return syscall(SYS_memfd_create, "t_service", 0) == -1 && errno == EPERM ? 0 : -1;
}

int main(int argc, char **argv)
{
	int k = argc > 1 ? atoi(argv[1]) : 3, base = argc > 2 ? atoi(argv[2]) : 0, me = -1;
	pid_t kids[16];
	sigset_t s;

	if (k < 0 || k > 16)
		return 2;
	if (argc > 3 && !strcmp(argv[3], "seccomp") && refuse_memfd()) {
		say("seccomp filter not installed\n");
		return 4;
	}
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGTERM);
	sigprocmask(SIG_BLOCK, &s, NULL);
	bool late = argc > 3 && !strcmp(argv[3], "late");
	for (int i = 0; i < k && me < 0 && !late; i++) {
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
	for (int i = 0; i < k && me < 0 && late; i++) {
		pid_t p = fork();
		if (p < 0)
			return 3;
		if (p == 0) {
			me = i;
			line("ready", getpid(), 6000 + (base + me + 1) * 100);
		} else {
			kids[i] = p;
		}
	}
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
