#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "session/monitor.h"

#define MAPS_REFRESH_MS 1000

static int sfd = -1;
static bool session_leader;     /* a hangup of our terminal is sent to us alone */
static volatile sig_atomic_t said_wait;
static volatile sig_atomic_t forward_fd = -1;   /* pidfd of the command that gets our signals */
static void (*poll_fn)(void *, bool);
static void *poll_arg;
static double poll_period;

/* The signals that stop tracing. */
static sigset_t stop_signals(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	return s;
}

static sigset_t waited_signals(void)
{
	sigset_t s = stop_signals();

	sigaddset(&s, SIGCHLD);
	/* SIGUSR1: a snapshot now (taken while tracing; pending and unheard after the stop). */
	sigaddset(&s, SIGUSR1);
	return s;
}

int monitor_init(void)
{
	sigset_t s = waited_signals();

	session_leader = getsid(0) == getpid();
	if (sigprocmask(SIG_BLOCK, &s, NULL))
		return -1;
	sfd = signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK);
	return sfd < 0 ? -1 : 0;
}

/*
 * Did a stop signal reach heaptrace alone, not the command too?  kill(2)
 * and sigqueue(3) to our PID (or to the group: we cannot tell), and the
 * hangup of a terminal whose session we lead.  A key (Ctrl-C) or a hangup
 * reaching the whole foreground group comes from the kernel.
 */
static bool sent_to_us(int signo, int code)
{
	return code == SI_USER || code == SI_QUEUE || (signo == SIGHUP && code == SI_KERNEL && session_leader);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct stop monitor_run(struct tracee *tc, double duration, double interval, void (*tick)(void *), void *arg)
{
	struct target *t = tc->t;

	/*
	 * The memory map is re-read every second, and sooner at first: a
	 * launched command maps its libraries and starts its threads in its
	 * first milliseconds, and --unwind's per-process code cache is filled
	 * from the map (bpf_find_vma, its fallback, fails while threads map
	 * memory).
	 */
	double start = now_s(), maps_gap = 0.01, next_maps = start + maps_gap, next_tick = start + interval;
	double next_poll = start + poll_period;
	struct stop st = { 0 };

	bool said_exit = false;

	for (;;) {
		tracee_reap(tc, false);
		/* Seen by the reap (a -p target is ptraced too) before its pidfd: said all the same. */
		if (t->exited && !t->launched && !said_exit) {
			ht_err("process %d exited", t->pid);
			said_exit = true;
		}
		if (t->exited && !(tc->outlive && tracee_others_alive(tc))) {
			st.why = STOP_TARGET_EXITED;
			return st;
		}

		double now = now_s();
		int timeout = (int)((next_maps - now) * 1000) + 1;
		if (timeout < 0)
			timeout = 0;
		if (poll_fn && now >= next_poll) {
			poll_fn(poll_arg, false);
			next_poll = now_s() + poll_period;
		}
		if (poll_fn && (next_poll - now_s()) * 1000 < timeout)
			timeout = (int)((next_poll - now_s()) * 1000) + 1;
		if (interval > 0) {
			if (now >= next_tick) {
				tick(arg);
				/* Ticks keep their cadence; a slow one is not made up for. */
				while (next_tick <= now_s())
					next_tick += interval;
			}
			if ((next_tick - now_s()) * 1000 < timeout)
				timeout = (int)((next_tick - now_s()) * 1000) + 1;
		}
		if (duration > 0) {
			double left = start + duration - now;
			if (left <= 0) {
				st.why = STOP_DURATION;
				return st;
			}
			if (left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}

		struct pollfd fds[2] = { { .fd = sfd, .events = POLLIN }, { .fd = t->pidfd, .events = POLLIN } };
		int n = poll(fds, t->launched || t->exited ? 1 : 2, timeout);
		if (n < 0 && errno != EINTR) {
			ht_err("poll: %s", strerror(errno));
			st.why = STOP_SIGNAL;
			return st;
		}
		if (!t->launched && !t->exited && n > 0 && (fds[1].revents & (POLLIN | POLLHUP))) {
			t->exited = true;
			ht_err("process %d exited", t->pid);
			said_exit = true;
			if (!(tc->outlive && tracee_others_alive(tc))) {
				st.why = STOP_TARGET_EXITED;
				return st;
			}
		}
		if (n > 0 && (fds[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					continue;
				if (si.ssi_signo == SIGUSR1) {
					if (poll_fn)
						poll_fn(poll_arg, true);
					continue;
				}
				st.why = STOP_SIGNAL;
				st.signo = si.ssi_signo;
				st.sent_to_us = sent_to_us(si.ssi_signo, si.ssi_code);
				return st;
			}
		}
		if (now_s() >= next_maps) {
			/* dlopen()ed libraries must be in MAPPED_LIBRARIES even if the process dies unseen. */
			target_refresh_maps(t);
			if (tc->on_poll && tc->on_poll(tc->hook_arg)) {
				st.why = STOP_UNDELIVERED;
				return st;
			}
			if ((maps_gap *= 2) > MAPS_REFRESH_MS / 1000.0)
				maps_gap = MAPS_REFRESH_MS / 1000.0;
			next_maps = now_s() + maps_gap;
		}
	}
}

static void after_stop(int signo, siginfo_t *si, void *uc)
{
	static const char msg[] = "heaptrace: writing profile, please wait\n";
	int saved = errno;

	(void)uc;
	if (forward_fd >= 0) {
		if (sent_to_us(signo, si->si_code))
			syscall(SYS_pidfd_send_signal, (int)forward_fd, signo, NULL, 0);
	} else if (!said_wait) {
		said_wait = 1;
		ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
		(void)n;
	}
	errno = saved;
}

void monitor_on_poll(void (*fn)(void *arg, bool usr1), void *arg, double period)
{
	poll_fn = fn;
	poll_arg = arg;
	poll_period = period;
}

void monitor_hold_signals(void)
{
	struct sigaction sa = { .sa_sigaction = after_stop, .sa_flags = SA_SIGINFO | SA_RESTART }, old;
	sigset_t s = stop_signals();

	/* In place before they are unblocked: one pending since the stop (a second Ctrl-C) is handled too. */
	sa.sa_mask = s;
	for (int sig = 1; sig < NSIG; sig++) {
		if (!sigismember(&s, sig))
			continue;
		/* Ignored (nohup): stays ignored. */
		if (!sigaction(sig, NULL, &old) && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sig, &sa, NULL);
	}
	sigprocmask(SIG_UNBLOCK, &s, NULL);
}

void monitor_forward_to(int pidfd)
{
	forward_fd = pidfd;
}
