/*
 * The processes traced beside the target: -p's others, a cgroup's (those in
 * it at the start, and those moved into it later: cgroup.procs is read
 * again at each maps refresh of the ptrace loop, at most a second apart),
 * and under --follow-fork the descendants already running at the attach.
 * Each is traced as a followed child is (process slot, counters, profile,
 * its links closed at its end), with a stub of its own where it can have
 * one (procstub.c), else uprobes (see docs/process-trees.md).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/procset.h"
#include "session/procstub.h"
#include "session/state.h"
#include "util/log.h"
#include "util/procfs.h"
#include "util/rss.h"
#include "util/time.h"

/* The pids of DIR/cgroup.procs, heaptrace's own left out.  Their number, or -1 (printed). */
static int cgroup_pids(const char *dir, uint32_t *pids, int max)
{
	char path[4200], *text, *p, *end;
	int n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (!(text = read_text_file(path))) {
		ht_err("--cgroup %s: not a cgroup directory (cannot read %s: %s)", dir, path, strerror(errno));
		return -1;
	}
	for (p = text; *p; p = end) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		if (v > 0 && v != getpid() && n < max)
			pids[n++] = (uint32_t)v;
	}
	free(text);
	return n;
}

/* A process heaptrace can name: a user program (a kernel thread has no exe). */
static bool user_process(pid_t pid)
{
	char *exe = proc_exe(pid);
	bool ok = exe != NULL;

	free(exe);
	return ok;
}

/* A dynamically linked process (a libc mapped): the target's allocator is planned from it. */
static bool dynamic_process(pid_t pid)
{
	char *maps = proc_maps(pid);
	bool ok = maps && strstr(maps, "/libc.so");

	free(maps);
	return ok;
}

static int by_pid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int procset_target(struct trace_opts *o)
{
	uint32_t pids[HT_MAX_PROCS];
	int n, first = -1;

	if (!o->cgroup)
		return 0;
	if ((n = cgroup_pids(o->cgroup, pids, HT_MAX_PROCS)) < 0)
		return -1;
	/* Processes forked in a cgroup are in it: they are followed. */
	o->follow_fork = true;
	/*
	 * The target: the oldest (lowest pid: a service's parent, as a rule)
	 * that is dynamically linked, else the oldest user process; the
	 * others are adopted (and may be skipped) after its attach.
	 */
	qsort(pids, n, sizeof(*pids), by_pid);
	for (int i = 0; i < n && first < 0; i++)
		if (dynamic_process(pids[i]))
			first = i;
	for (int i = 0; i < n && first < 0; i++)
		if (user_process(pids[i]))
			first = i;
	if (first < 0) {
		ht_err("--cgroup %s: no process to trace in it", o->cgroup);
		return -1;
	}
	o->n_pids = 0;
	o->pids[o->n_pids++] = pids[first];
	for (int i = 0; i < n; i++)
		if (i != first)
			o->pids[o->n_pids++] = pids[i];
	o->pid = o->pids[0];
	return 0;
}

/* heaptrace's own resident memory now, KiB. */
static uint64_t self_rss_kib(void)
{
	struct ht_rss r = { 0 };

	rss_read(getpid(), &r);
	return rss_total(&r) / 1024;
}

/* Is pid traced already (the target, or a child or process adopted)? */
static bool known(const struct session *s, pid_t pid)
{
	if (pid == s->t.pid)
		return true;
	/* One that ended is not this one: a new process of the cgroup may have its pid. */
	for (size_t i = 0; i < s->tc.n_kids; i++)
		if (s->tc.kids[i].pid == pid && !s->tc.kids[i].exited)
			return true;
	return false;
}

/* Each process is said once: a cgroup's is seen again at every poll. */
static void skipped(pid_t pid, const char *why)
{
	static pid_t said[HT_MAX_PROCS];
	static unsigned n_said;
	char *name;

	for (unsigned i = 0; i < n_said && i < HT_MAX_PROCS; i++)
		if (said[i] == pid)
			return;
	said[n_said++ % HT_MAX_PROCS] = pid;
	name = proc_program_name(pid);

	ht_err("PID %d (%s) is not traced: %s", pid, name ? name : "gone", why);
	free(name);
}

/* Trace one running process beside the target.  Its slot, or 0 (the reason printed). */
static uint32_t adopt(struct session *s, pid_t pid, pid_t parent)
{
	double t0 = now_ms();
	char root[64], why[256];
	pid_t with;
	int err;

	if (known(s, pid))
		return 0;
	if (s->next_slot >= HT_MAX_PROCS) {
		skipped(pid, "too many processes traced already");
		return 0;
	}
	if (!user_process(pid)) {
		skipped(pid, errno == ENOENT ? "it is gone" : "no program to read (a kernel thread, or no permission)");
		return 0;
	}
	if ((with = procstub_shares(s, pid))) {
		snprintf(why, sizeof(why), "it shares the memory of PID %d (a vfork child before its exec)", with);
		skipped(pid, why);
		return 0;
	}
	if ((err = tracee_adopt(&s->tc, pid, parent))) {
		snprintf(why, sizeof(why), "cannot ptrace it: %s%s", strerror(-err),
			 err == -EPERM ? " (another debugger, another user namespace, or yama)" : "");
		skipped(pid, err == -ESRCH || err == -ENOENT ? "it is gone" : why);
		return 0;
	}
	uint32_t slot = s->next_slot;
	char *maps = proc_maps(pid);
	const char *bad = NULL;
	session_proc_root(s, pid, root, sizeof(root));
	/*
	 * Its own slot as its parent's: what it frees from before the attach
	 * was never seen, as for the target.  The probes the stub does not
	 * take first, then its own program and allocator (another executable;
	 * a container's libc: planned as at an exec), then the stub's
	 * functions: a stub of its own, or their uprobes (procstub.c).
	 */
	s->ex.upto[slot] = s->plan.n;
	if (tracer_add_proc(&s->tr, pid, slot, slot) ||
	    inject_reclaim_running(pid, &s->plan, session_traced_by_us, s) < 0 || probes_attach(&s->plan, &s->tr, pid))
		bad = "its probes cannot be attached (said above)";
	else if (exec_follow(&s->ex, pid, slot, maps && *maps ? maps : "", root))
		bad = "no allocator found in its program (a static binary without symbols?)";
	else if (procstub_attach(s, pid, slot))
		bad = "its probes cannot be attached (said above)";
	free(maps);
	if (bad) {
		tracer_forget_pid(&s->tr, pid);
		skipped(pid, bad);
		tracee_adopted(&s->tc, pid, 0);
		return 0;
	}
	timeline_proc(&s->tl, slot, pid);
	s->next_slot++;
	tracee_adopted(&s->tc, pid, slot);
	s->adopted.n++;
	s->adopted.ms += now_ms() - t0;
	s->adopted.links = tracer_links(&s->tr);
	ht_info("tracing PID %d too (slot %u, %s): attached in %.1f ms", pid, slot,
		s->kin[slot] ? "its own stub" : "uprobes", now_ms() - t0);
	return slot;
}

/* --follow-fork: the descendants of pid already running, each adopted before its own. */
static void adopt_descendants(struct session *s, pid_t pid, int depth)
{
	char path[320];
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (depth > 64 || !(d = opendir(path)))
		return;
	for (struct dirent *e; (e = readdir(d));) {
		char *text, *p, *end;
		if (atoi(e->d_name) <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", pid, e->d_name);
		if (!(text = read_text_file(path)))
			continue;
		for (p = text;; p = end) {
			long kid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (kid > 0 && !known(s, kid) && adopt(s, kid, pid))
				adopt_descendants(s, kid, depth + 1);
		}
		free(text);
	}
	closedir(d);
}

void procset_adopt(struct session *s)
{
	const struct trace_opts *o = s->o;
	uint32_t before = s->next_slot;
	double t0 = now_ms();

	s->adopted.rss_before = self_rss_kib();
	for (int i = 1; i < o->n_pids; i++)
		adopt(s, o->pids[i], 0);
	/* A cgroup's processes are all in cgroup.procs; outside it, the tree is followed from the target. */
	if (o->follow_fork && !o->cgroup && !o->argv) {
		adopt_descendants(s, s->t.pid, 0);
		for (int i = 1; i < o->n_pids; i++)
			adopt_descendants(s, o->pids[i], 0);
	}
	s->adopted.rss_after = self_rss_kib();
	if (s->next_slot > before)
		ht_info("%u processes traced beside PID %d, attached in %.1f ms", s->next_slot - before, s->t.pid,
			now_ms() - t0);
}

void procset_poll(void *arg)
{
	struct session *s = arg;
	uint32_t pids[HT_MAX_PROCS];
	int n;

	if (s->stopped || !s->o->cgroup || (n = cgroup_pids(s->o->cgroup, pids, HT_MAX_PROCS)) < 0)
		return;
	for (int i = 0; i < n; i++)
		if (!known(s, pids[i]) && adopt(s, pids[i], 0))
			ht_info("PID %d joined cgroup %s", pids[i], s->o->cgroup);
}
