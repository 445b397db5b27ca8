// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The last close of a uprobe or perf tracepoint link waits for RCU grace
 * periods (uprobe unregistration: tasks-trace RCU and SRCU; a tracepoint:
 * SRCU and RCU), 50-100 ms here, which only the kernel's bookkeeping needs.
 * When every traced process has ended nothing can hit the probes any more,
 * so heaptrace need not wait: an orphan that holds a second reference to
 * each link outlives heaptrace, and the last close, with its grace periods,
 * is the orphan's exit.  heaptrace's own closes then only drop references.
 *
 * The orphan keeps only anonymous-inode files (links, perf events, maps,
 * programs): pipes, terminals, sockets and files go at once, so that a
 * reader of heaptrace's output sees its end when heaptrace ends and a port
 * is free for the next run.  It is forked from a process that may have
 * other threads, so it does only what is async-signal-safe (no malloc:
 * raw getdents64 and readlink), and it ends when heaptrace has ended, or
 * after 10 s whatever happens.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer/release.h"

struct dirent64_raw {
	unsigned long long ino;
	long long off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* "/proc/self/fd/" and the decimal fd, into a buffer of 32. */
static void fd_path(char *p, int fd)
{
	char digits[12];
	int n = 0;

	memcpy(p, "/proc/self/fd/", 14);
	do {
		digits[n++] = (char)('0' + fd % 10);
		fd /= 10;
	} while (fd);
	for (int i = 0; i < n; i++)
		p[14 + i] = digits[n - 1 - i];
	p[14 + n] = '\0';
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* The links and perf events kept, closed side by side at the end: each last close waits for grace periods of its own. */
enum { MAX_KEPT = 1024, CLOSERS = 16 };
static int kept[MAX_KEPT];
static int n_kept;

static void *close_share(void *arg)
{
	for (int i = (int)(long)arg; i < n_kept; i += CLOSERS)
		close(kept[i]);
	return NULL;
}

/* Close every file but the anonymous-inode ones and keep; list the links and perf events. */
static void close_but_anon(int keep)
{
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[4096];
	long n;

	if (dir < 0)
		return;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			const struct dirent64_raw *d = (const void *)(buf + off);
			off += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			int fd = 0;
			for (const char *c = d->name; *c; c++)
				fd = fd * 10 + (*c - '0');
			if (fd == dir || fd == keep)
				continue;
			char path[32], target[32];
			fd_path(path, fd);
			ssize_t len = readlink(path, target, sizeof(target));
			if (len < 10 || memcmp(target, "anon_inode", 10))
				close(fd);
			else if (n_kept < MAX_KEPT && ((len == 19 && !memcmp(target, "anon_inode:bpf_link", 19)) ||
						       (len == 23 && !memcmp(target, "anon_inode:[perf_event]", 23))))
				kept[n_kept++] = fd;
		}
	}
	close(dir);
}

void tracer_release_at_exit(void)
{
	int self = (int)syscall(SYS_pidfd_open, getpid(), 0);

	if (self < 0)
		return;
	/* Two forks: the orphan is nobody's child here, so no wait of heaptrace's can take it. */
	pid_t mid = fork();
	if (mid == 0) {
		sigset_t all;
		sigfillset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		setsid();
		if (fork() == 0) {
			prctl(PR_SET_NAME, "heaptrace-rel");
			close_but_anon(self);
			struct pollfd p = { .fd = self, .events = POLLIN };
			poll(&p, 1, 10000);
			/*
			 * One process alone now: threads may start (glibc reset its
			 * state at the fork).  Not under ASan: its thread registry's
			 * lock, held by another of heaptrace's threads at the fork,
			 * stays held here, and the orphan hung with its links for good.
			 */
			pthread_t t[CLOSERS];
			int started = 0;
			for (; !SANITIZED && started < CLOSERS - 1; started++)
				if (pthread_create(&t[started], NULL, close_share, (void *)(long)(started + 1)))
					break;
			close_share(0);
			for (int i = 0; i < started; i++)
				pthread_join(t[i], NULL);
			/* A thread that could not start leaves its share to the exit. */
		}
		_exit(0);
	}
	close(self);
	if (mid > 0)
		while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
			;
}
