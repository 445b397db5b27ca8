#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "follow.h"
#include "log.h"
#include "target.h"

#define NO_SLOT UINT32_MAX

int follow_ptrace_options(void)
{
	return PTRACE_O_TRACEEXIT | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;
}

/* The thread group a task belongs to (/proc/TID/status), or -1 when it is gone. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], *s, *p;
	pid_t tgid = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (!(s = read_text_file(path)))
		return -1;
	if ((p = strstr(s, "\nTgid:")))
		tgid = atoi(p + 6);
	free(s);
	return tgid;
}

static struct follow_tid *find_tid(struct follow *f, pid_t tid)
{
	for (size_t i = 0; i < f->n_tids; i++)
		if (f->tids[i].tid == tid)
			return &f->tids[i];
	return NULL;
}

/* Room for one more element in *arr (n used of *cap); false when out of memory. */
static bool reserve(void *arr, size_t n, size_t *cap, size_t size)
{
	void **p = arr;

	if (n < *cap)
		return true;
	size_t c = *cap ? 2 * *cap : 16;
	void *g = realloc(*p, c * size);
	if (!g)
		return false;
	*p = g;
	*cap = c;
	return true;
}

static struct follow_tid *add_tid(struct follow *f, pid_t tid)
{
	struct follow_tid *t = find_tid(f, tid);

	if (t)
		return t;
	if (!reserve(&f->tids, f->n_tids, &f->cap_tids, sizeof(*f->tids)))
		return NULL;
	f->tids[f->n_tids] = (struct follow_tid){ .tid = tid };
	return &f->tids[f->n_tids++];
}

static void drop_tid(struct follow *f, pid_t tid)
{
	struct follow_tid *t = find_tid(f, tid);

	if (t)
		*t = f->tids[--f->n_tids];
}

static struct follow_child *find_kid(struct follow *f, pid_t pid)
{
	for (size_t i = 0; i < f->n_kids; i++)
		if (f->kids[i].pid == pid)
			return &f->kids[i];
	return NULL;
}

static struct follow_child *add_kid(struct follow *f, pid_t pid, pid_t parent)
{
	if (!reserve(&f->kids, f->n_kids, &f->cap_kids, sizeof(*f->kids)))
		return NULL;
	f->kids[f->n_kids] = (struct follow_child){ .pid = pid, .parent = parent, .slot = NO_SLOT };
	return &f->kids[f->n_kids++];
}

static void refresh_kid_maps(struct follow_child *k)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", k->pid);
	char *m = read_text_file(path);
	if (m && *m) {
		free(k->maps);
		k->maps = m;
	} else {
		free(m);
	}
}

void follow_refresh_maps(struct follow *f)
{
	for (size_t i = 0; f && i < f->n_kids; i++)
		if (!f->kids[i].exited && f->kids[i].slot != NO_SLOT)
			refresh_kid_maps(&f->kids[i]);
}

void follow_track(struct follow *f, pid_t tid)
{
	add_tid(f, tid);
}

int follow_seize(struct target *t)
{
	char path[64];
	bool added = true;

	/* Threads started while we seize the others: go round until no new one appears. */
	while (added) {
		added = false;
		snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
		DIR *d = opendir(path);
		if (!d) {
			ht_err("cannot list the threads of PID %d: %s", t->pid, strerror(errno));
			return -1;
		}
		for (struct dirent *e; (e = readdir(d));) {
			pid_t tid = atoi(e->d_name);
			if (tid <= 0 || find_tid(t->follow, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, follow_ptrace_options())) {
				if (errno == ESRCH)
					continue;       /* the thread ended meanwhile */
				ht_err("--follow-fork: cannot ptrace PID %d (%s)%s", t->pid, strerror(errno),
				       errno == EPERM ? ": is a debugger attached, or is ptrace restricted (yama)?" : "");
				closedir(d);
				return -1;
			}
			add_tid(t->follow, tid);
			added = true;
		}
		closedir(d);
	}
	t->seized = true;
	return 0;
}

/* The slot of a traced process: 0 the target, a child's; NO_SLOT when untraced. */
static uint32_t slot_of(struct target *t, pid_t tgid)
{
	struct follow_child *k;

	if (tgid == t->pid)
		return 0;
	k = find_kid(t->follow, tgid);
	return k ? k->slot : NO_SLOT;
}

/* Let a new process go: traced (its probes are attached) or, when it cannot be, detached. */
static void release_kid(struct follow_child *k)
{
	if (k->slot == NO_SLOT)
		ptrace(PTRACE_DETACH, k->pid, 0, 0);
	else
		ptrace(PTRACE_CONT, k->pid, 0, 0);
}

/* A tracee forked (or cloned a new process): trace the child before it runs. */
static void on_new_process(struct target *t, pid_t parent_tid, pid_t child)
{
	struct follow *f = t->follow;
	pid_t parent = tgid_of(parent_tid);
	uint32_t parent_slot = slot_of(t, parent);
	struct follow_child *k = add_kid(f, child, parent);

	if (!k) {
		f->not_followed++;
		return;
	}
	if (parent_slot != NO_SLOT) {
		k->slot = f->on_fork(f->arg, child, parent_slot);
		if (!k->slot)
			k->slot = NO_SLOT;
	}
	if (k->slot == NO_SLOT)
		f->not_followed++;
	else
		refresh_kid_maps(k);
	/* Its first stop may have come before this event: then it waits for us. */
	struct follow_tid *ct = find_tid(f, child);
	if (ct && ct->held) {
		ct->held = false;
		release_kid(k);
	}
}

static void on_exit_status(struct target *t, pid_t tid, int st)
{
	struct follow_child *k;

	drop_tid(t->follow, tid);
	if (tid == t->pid) {
		t->exited = true;
		t->status = st;
	} else if ((k = find_kid(t->follow, tid))) {
		k->exited = true;
	}
}

/* A task's first stop: auto-attached by a fork or clone event we may not have seen yet. */
static void on_first_stop(struct target *t, pid_t tid)
{
	struct follow_tid *ft = add_tid(t->follow, tid);
	pid_t tgid = tgid_of(tid);
	struct follow_child *k;

	if (tgid != tid) {
		ptrace(PTRACE_CONT, tid, 0, 0);         /* a new thread of a traced process */
	} else if ((k = find_kid(t->follow, tid))) {
		release_kid(k);
	} else if (ft) {
		ft->held = true;                        /* until its parent's fork event */
	}
}

void follow_reap(struct target *t, bool wait)
{
	struct follow *f = t->follow;
	int st;

	for (;;) {
		if (wait && t->exited)
			return;
		pid_t r = waitpid(-1, &st, __WALL | (wait ? 0 : WNOHANG));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			on_exit_status(t, r, st);
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		int event = st >> 16, sig = WSTOPSIG(st);
		if (!find_tid(f, r)) {
			on_first_stop(t, r);
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
				on_new_process(t, r, msg);
			ptrace(PTRACE_CONT, r, 0, 0);
			break;
		case PTRACE_EVENT_EXIT: {
			/* The last moment its mappings exist. */
			struct follow_child *k = find_kid(f, r);
			if (r == t->pid)
				target_refresh_maps(t);
			else if (k && k->slot != NO_SLOT)
				refresh_kid_maps(k);
			ptrace(PTRACE_CONT, r, 0, 0);
			break;
		}
		case PTRACE_EVENT_STOP:
			/* Group stop (SIGSTOP, SIGTSTP): stay stopped, as without us. */
			ptrace(PTRACE_LISTEN, r, 0, 0);
			break;
		default:
			ptrace(PTRACE_CONT, r, 0, sig);
		}
	}
}

void follow_free(struct follow *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_kids; i++)
		free(f->kids[i].maps);
	free(f->kids);
	free(f->tids);
	memset(f, 0, sizeof(*f));
}
