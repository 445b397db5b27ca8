#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "process/tracee.h"
#include "util/array.h"
#include "util/log.h"
#include "util/procfs.h"
#include "util/rss.h"

#define NO_SLOT UINT32_MAX

static int ptrace_options(const struct tracee *tc)
{
	return PTRACE_O_TRACEEXIT | PTRACE_O_TRACESYSGOOD | (tc->on_exec || tc->on_child_exec ? PTRACE_O_TRACEEXEC : 0) |
	       (tc->follow || tc->all ? PTRACE_O_TRACECLONE : 0) |
	       (tc->follow ? PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK : 0);
}

/* The thread group a task belongs to (/proc/TID/status), or -1 when it is gone. */
static pid_t tgid_of(pid_t tid)
{
	unsigned long long tgid;

	return proc_status_num(tid, "Tgid:", 10, &tgid) ? (pid_t)tgid : -1;
}

static struct tracee_tid *find_tid(struct tracee *f, pid_t tid)
{
	for (size_t i = 0; i < f->n_tids; i++)
		if (f->tids[i].tid == tid)
			return &f->tids[i];
	return NULL;
}

static struct tracee_tid *add_tid(struct tracee *f, pid_t tid)
{
	struct tracee_tid *t = find_tid(f, tid);

	if (t)
		return t;
	if (ARRAY_RESERVE(f->tids, f->cap_tids, f->n_tids + 1, 16))
		return NULL;
	f->tids[f->n_tids] = (struct tracee_tid){ .tid = tid };
	return &f->tids[f->n_tids++];
}

static void drop_tid(struct tracee *f, pid_t tid)
{
	struct tracee_tid *t = find_tid(f, tid);

	if (t)
		*t = f->tids[--f->n_tids];
}

/* The live process pid: one that ended keeps its entry (its profile), and its pid may be another's now. */
static struct tracee_child *find_kid(struct tracee *f, pid_t pid)
{
	for (size_t i = 0; i < f->n_kids; i++)
		if (f->kids[i].pid == pid && !f->kids[i].exited)
			return &f->kids[i];
	return NULL;
}

static struct tracee_child *add_kid(struct tracee *f, pid_t pid, pid_t parent)
{
	struct tracee_child *k = NULL;

	pthread_mutex_lock(&f->lock);
	if (!ARRAY_RESERVE(f->kids, f->cap_kids, f->n_kids + 1, 16)) {
		f->kids[f->n_kids] = (struct tracee_child){ .pid = pid, .parent = parent, .slot = NO_SLOT };
		k = &f->kids[f->n_kids++];
	}
	pthread_mutex_unlock(&f->lock);
	return k;
}

static void refresh_kid_maps(struct tracee *f, struct tracee_child *k)
{
	if (__atomic_load_n(&k->maps_final, __ATOMIC_ACQUIRE))
		return;         /* read at its exit's stop (struct target's maps_final) */
	char *m = proc_maps(k->pid);
	if (m && *m) {
		pthread_mutex_lock(&f->lock);
		free(k->maps);
		k->maps = m;
		pthread_mutex_unlock(&f->lock);
	} else {
		free(m);
	}
}

void tracee_refresh_maps(struct tracee *f)
{
	for (size_t i = 0; i < f->n_kids; i++)
		if (!f->kids[i].exited && f->kids[i].slot != NO_SLOT)
			refresh_kid_maps(f, &f->kids[i]);
}

int tracee_seize_launched(struct tracee *tc)
{
	struct target *t = tc->t;

	if (ptrace(PTRACE_SEIZE, t->pid, 0, ptrace_options(tc))) {
		if (tc->follow) {
			ht_err("--follow-fork: cannot ptrace the command: %s", strerror(errno));
			return -1;
		}
		ht_info("cannot ptrace the command (%s): its memory map is read before exit instead",
			strerror(errno));
		return 0;
	}
	tc->seized = true;
	if (tc->follow)
		add_tid(tc, t->pid);
	return 0;
}

/* A round of tracee_seize_all: one thread of the target (proc_take_threads). */
struct seize_round {
	struct tracee *tc;
	bool failed;                    /* said: --follow-fork cannot go on */
};

static int seize_listed(void *arg, pid_t tid)
{
	struct seize_round *a = arg;
	struct tracee *tc = a->tc;
	pid_t pid = tc->t->pid;

	if (find_tid(tc, tid))
		return 0;
	if (ptrace(PTRACE_SEIZE, tid, 0, ptrace_options(tc))) {
		if (errno == ESRCH)
			return 0;       /* the thread ended meanwhile */
		if (!tc->follow) {
			ht_info("cannot ptrace thread %d of PID %d (%s): a program it executes is not followed", tid,
				pid, strerror(errno));
			return 0;
		}
		ht_err("--follow-fork: cannot ptrace PID %d (%s)%s", pid, strerror(errno),
		       errno == EPERM ? ": is a debugger attached, or is ptrace restricted (yama)?" : "");
		a->failed = true;
		return -1;
	}
	add_tid(tc, tid);
	return 1;
}

int tracee_seize_all(struct tracee *tc)
{
	struct seize_round a = { tc, false };
	int err = proc_take_threads(tc->t->pid, seize_listed, &a);

	if (err && !a.failed)
		ht_err("cannot list the threads of PID %d: %s", tc->t->pid, strerror(-err));
	if (err)
		return -1;
	/* -p without --follow-fork: the threads that could not be seized run on, untraced. */
	tc->seized = tc->follow || tc->n_tids > 0;
	return 0;
}

bool tracee_others_alive(const struct tracee *tc)
{
	for (size_t i = 0; i < tc->n_kids; i++)
		if (tc->kids[i].slot != NO_SLOT && !tc->kids[i].exited)
			return true;
	return false;
}

bool tracee_has(const struct tracee *tc, pid_t tid)
{
	for (size_t i = 0; i < tc->n_tids; i++)
		if (tc->tids[i].tid == tid)
			return true;
	return false;
}

/* The slot of a traced process: 0 the target, a child's; NO_SLOT when untraced. */
static uint32_t slot_of(struct tracee *f, pid_t tgid)
{
	struct tracee_child *k;

	if (tgid == f->t->pid)
		return 0;
	k = find_kid(f, tgid);
	return k ? k->slot : NO_SLOT;
}

/* Let a new process go: traced (its probes are attached) or, when it cannot be, detached. */
static void release_kid(struct tracee_child *k)
{
	if (k->slot == NO_SLOT)
		ptrace(PTRACE_DETACH, k->pid, 0, 0);
	else
		ptrace(PTRACE_CONT, k->pid, 0, 0);
}

/* A tracee forked (or cloned a new process): trace the child before it runs. */
static void on_new_process(struct tracee *f, pid_t parent_tid, pid_t child)
{
	pid_t parent = tgid_of(parent_tid);
	uint32_t parent_slot = slot_of(f, parent);
	struct tracee_child *k = add_kid(f, child, parent);

	if (!k) {
		f->not_followed++;
		return;
	}
	uint32_t slot = parent_slot != NO_SLOT ? f->on_fork(f->arg, child, parent_slot) : 0;
	if (!slot) {
		f->not_followed++;
	} else {
		char *name = proc_program_name(child);
		refresh_kid_maps(f, k);
		pthread_mutex_lock(&f->lock);
		k->slot = slot;
		k->name = name;
		pthread_mutex_unlock(&f->lock);
	}
	/* Its first stop may have come before this event: then it waits for us. */
	struct tracee_tid *ct = find_tid(f, child);
	if (ct && ct->held) {
		ct->held = false;
		release_kid(k);
	}
}

static void on_exit_status(struct tracee *f, pid_t tid, int st)
{
	struct tracee_child *k;

	drop_tid(f, tid);
	if (tid == f->t->pid) {
		f->t->exited = true;
		f->t->status = st;
	} else if ((k = find_kid(f, tid))) {
		pthread_mutex_lock(&f->lock);
		k->exited = true;
		pthread_mutex_unlock(&f->lock);
		if (f->on_child_exit && k->slot != NO_SLOT)
			f->on_child_exit(f->hook_arg, k);
	}
}

/* A task's first stop: auto-attached by a fork or clone event we may not have seen yet. */
static void on_first_stop(struct tracee *f, pid_t tid)
{
	struct tracee_tid *ft = add_tid(f, tid);
	pid_t tgid = tgid_of(tid);
	struct tracee_child *k;

	if (tgid != tid) {
		ptrace(PTRACE_CONT, tid, 0, 0);         /* a new thread of a traced process */
	} else if ((k = find_kid(f, tid))) {
		release_kid(k);
	} else if (ft) {
		ft->held = true;                        /* until its parent's fork event */
	}
}

/* A PTRACE_EVENT_STOP with one of these is a group-stop (ptrace(2)); any other is continued. */
static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void tracee_reap(struct tracee *f, bool wait)
{
	struct target *t = f->t;
	int st;

	/*
	 * Without --follow-fork only the launched command is ours to wait
	 * for, or a -p target's threads; with it, every task of the tree
	 * is, and so is any pid.
	 */
	if (!t->launched && !f->follow && !(f->all && f->seized))
		return;
	for (;;) {
		/* Followed children may still report after the target's end; they are waited for with it. */
		if (t->exited && (wait || !(f->follow || f->outlive)))
			return;
		pid_t r = waitpid(f->follow || f->all ? -1 : t->pid, &st, __WALL | (wait ? 0 : WNOHANG));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			on_exit_status(f, r, st);
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		int event = st >> 16, sig = WSTOPSIG(st);
		if ((f->follow || f->all) && !find_tid(f, r)) {
			on_first_stop(f, r);
			continue;
		}
		unsigned long msg = 0;
		switch (event) {
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
		case PTRACE_EVENT_CLONE:
			ptrace(PTRACE_GETEVENTMSG, r, 0, &msg);
			/* clone() without CLONE_THREAD makes a process too. */
			if (msg && tgid_of(msg) == (pid_t)msg)
				on_new_process(f, r, msg);
			ptrace(PTRACE_CONT, r, 0, 0);
			break;
		case PTRACE_EVENT_EXIT: {
			/* The last moment its mappings exist (and its RSS, remembered for the profiles after). */
			struct tracee_child *k = find_kid(f, r);
			struct ht_rss rss;
			if (r == tgid_of(r))
				rss_read(r, &rss);
			if (r == t->pid) {
				target_refresh_maps(t);
				__atomic_store_n(&t->maps_final, true, __ATOMIC_RELEASE);
				if (f->on_exiting)
					f->on_exiting(f->hook_arg);
			} else if (k && k->slot != NO_SLOT) {
				refresh_kid_maps(f, k);
				__atomic_store_n(&k->maps_final, true, __ATOMIC_RELEASE);
				if (f->on_child_exiting)
					f->on_child_exiting(f->hook_arg, k);
			}
			ptrace(PTRACE_CONT, r, 0, 0);
			break;
		}
		case PTRACE_EVENT_EXEC: {
			/* r is the thread group's leader now, whichever thread called execve. */
			struct tracee_child *k = find_kid(f, r);
			if (f->on_exec && tgid_of(r) == t->pid) {
				/* A new image: its maps are read from now on (an old leader's exit may have said final). */
				__atomic_store_n(&t->maps_final, false, __ATOMIC_RELEASE);
				f->on_exec(f->hook_arg, r);
			} else if (f->on_child_exec && k && k->slot != NO_SLOT) {
				__atomic_store_n(&k->maps_final, false, __ATOMIC_RELEASE);
				refresh_kid_maps(f, k);
				char *name = proc_program_name(r);
				if (name) {
					pthread_mutex_lock(&f->lock);
					free(k->name);
					k->name = name;
					pthread_mutex_unlock(&f->lock);
				}
				f->on_child_exec(f->hook_arg, k);
			}
			ptrace(PTRACE_CONT, r, 0, 0);
			break;
		}
		case PTRACE_EVENT_STOP:
			/*
			 * A group-stop (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU): stay
			 * stopped as without us, yet let a SIGCONT wake it
			 * (PTRACE_LISTEN).  With SIGTRAP it is the notification
			 * that a SIGCONT came (or a PTRACE_INTERRUPT): listening
			 * again would keep it stopped for good; it runs on.
			 */
			ptrace(is_stop_signal(sig) ? PTRACE_LISTEN : PTRACE_CONT, r, 0, 0);
			break;
		default:
			/* A remote call's system-call stop left unreaped: no signal of its own to pass on. */
			if (sig == (SIGTRAP | 0x80))
				sig = 0;
			if (sig && f->on_signal && f->on_signal(f->hook_arg, r, sig))
				sig = 0;
			ptrace(PTRACE_CONT, r, 0, sig);
		}
	}
}

/* A round of tracee_adopt: one thread of the process pid (proc_take_threads). */
struct adopt_round {
	struct tracee *tc;
	pid_t pid;
};

static int adopt_listed(void *arg, pid_t tid)
{
	struct adopt_round *a = arg;

	if (find_tid(a->tc, tid))
		return 0;
	if (ptrace(PTRACE_SEIZE, tid, 0, ptrace_options(a->tc)))
		return errno == ESRCH && tid != a->pid ? 0 : -errno;
	if (!add_tid(a->tc, tid)) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -ENOMEM;
	}
	return 1;
}

int tracee_adopt(struct tracee *tc, pid_t pid, pid_t parent)
{
	struct adopt_round a = { tc, pid };
	size_t first = tc->n_tids;

	if (find_kid(tc, pid) || pid == tc->t->pid)
		return -EEXIST;
	int err = proc_take_threads(pid, adopt_listed, &a);
	if (!err && !add_kid(tc, pid, parent))
		err = -ENOMEM;
	if (err)
		while (tc->n_tids > first)
			ptrace(PTRACE_DETACH, tc->tids[--tc->n_tids].tid, 0, 0);
	return err;
}

void tracee_adopted(struct tracee *tc, pid_t pid, uint32_t slot)
{
	struct tracee_child *k = find_kid(tc, pid);

	if (!k)
		return;
	char *name = proc_program_name(pid);
	refresh_kid_maps(tc, k);
	pthread_mutex_lock(&tc->lock);
	k->slot = slot ? slot : NO_SLOT;
	free(k->name);
	k->name = name;
	pthread_mutex_unlock(&tc->lock);
	if (!slot)
		tc->not_followed++;
}

void tracee_free(struct tracee *f)
{
	for (size_t i = 0; i < f->n_kids; i++) {
		free(f->kids[i].maps);
		free(f->kids[i].name);
	}
	free(f->kids);
	free(f->tids);
	f->kids = NULL;
	f->tids = NULL;
	f->n_kids = f->n_tids = f->cap_kids = f->cap_tids = 0;
}
