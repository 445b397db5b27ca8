/*
 * The session's own state, shared by the files of session/ only: the
 * lifecycle (session.c) and the helpers it calls, which get it passed in
 * (struct session) and declare here what they do with it.  Nothing
 * outside session/ includes this, and it includes no header of
 * session.c's: the helpers call one way, never back into the lifecycle.
 */
#ifndef HT_SESSION_STATE_H
#define HT_SESSION_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"
#include "inject/inject.h"
#include "inject/pytables.h"
#include "probe/plan.h"
#include "tracer/links.h"
#include "process/target.h"
#include "process/tracee.h"
#include "profile/profile.h"
#include "profile/timeline.h"
#include "serve/snapshot.h"
#include "session/exec.h"
#include "session/oom.h"
#include "session/opts.h"
#include "session/specs.h"
#include "tracer/tracer.h"
#include "unwind/procs.h"
#include "util/time.h"

struct session {
	struct trace_opts *o;
	struct target t;
	struct tracee tc;
	struct probe_plan plan;
	struct tracer tr;
	struct unwind uw;
	struct tracer_config cfg;
	struct profile_source src;
	struct inject in;       /* the in-process fast path; in.n: functions given to it */
	/*
	 * --follow-fork: each process slot's stub (kin[0] is &in), NULL where
	 * none serves it; stub_uprobes[slot]: the stub's functions are
	 * uprobes for that process instead (it executed, or its stub failed).
	 */
	struct inject *kin[HT_MAX_PROCS];
	bool stub_uprobes[HT_MAX_PROCS];
	/* An exec'd child waiting at its loader for its stub (procstub_arm): the link that signals it. */
	struct tracer_hook arm_hooks[HT_MAX_PROCS];
	uint32_t next_slot;     /* --follow-fork: the next child's process slot */
	bool stopped;           /* tracing is over: later children run untraced */
	bool bad_input;         /* a --sym spec named nothing in the target: exit status 2 */
	bool memory_said;       /* check_memory() spoke (a reload does not repeat it) */
	struct exec_follow ex;  /* following execs: what is attached for each process */
	struct spec_images specs;       /* the specs, resolved in each program that runs */
	struct pytables pyt;            /* CPython's table slots pointed at jumps, per process */
	unsigned target_execs;  /* exec events of the target (a launched command's first is its own) */
	struct timeline tl;     /* -f html: the heap over time */
	struct snapshots *ss;   /* -i, --interval-bytes, SIGUSR1, --snapshot-at-rss */
	struct oom_watch oom;   /* the OOM killer's kills, --snapshot-at-rss */
	uint64_t next_bytes;    /* --interval-bytes: allocated bytes at the next snapshot */
	bool over_limit;        /* a process went over --limit-peak or --limit-leak */
	/*
	 * -v, what a set of processes costs (procset.c): those adopted running
	 * (at the start and cgroup joiners), the ms it took, and heaptrace's
	 * RSS (KiB) before and after the adoption at the start.
	 */
	struct {
		unsigned n;
		double ms;
		uint64_t rss_before, rss_after;
		int links;      /* BPF links open after the last adoption (they are closed before the report) */
	} adopted;
	/* Where the time goes (-v), in ms: each phase in all, when it ran several times. */
	struct {
		double start;           /* session_run began */
		double plan;            /* the target found or launched (held), its probes planned */
		double tables;          /* --unwind: CFI tables built or read from the cache */
		double load;            /* the BPF object loaded (tracer.times: its parts), rows published */
		double attach;          /* probes attached */
		double inject;          /* the fast path: the stub into the process */
		double run;             /* the traced run, until the stop */
		double detach;          /* the stub out, the probes off */
		double read;            /* the profile read from the maps */
		double symbolize, write;
	} ph;
};


/* traced.c: the root prefix that reaches a process's files (our own for a launched command's tree). */
void session_proc_root(const struct session *s, pid_t pid, char *buf, size_t len);
/* Whether thread tid is one of those the session traces (a remote_stop() filter; arg: the session). */
bool session_traced_by_us(void *arg, pid_t tid);

/* fastpath.c: the stub and CPython's table slots in the target; the phases' inject time counted. */
/*
 * A process stopped at an exec (tid: the thread stopped): CPython's
 * inlined tables redirected (inject/pytables.h).  True when it ended the
 * execve with one step to do so (then system calls can be made for it).
 */
bool session_python_at_exec(struct session *s, pid_t pid, pid_t tid);
/* -p: every thread stopped while CPython's inlined table slots are redirected. */
void session_python_running(struct session *s);
/* The end: each process's table slots back, with its threads stopped. */
void session_python_restore(struct session *s);
/*
 * -p: every thread stopped while the stub goes in; what it does not take
 * gets uprobes.  Without a stub of ours, an earlier heaptrace's jumps are
 * taken out all the same before any uprobe goes on them.  -1: one still
 * jumps (printed): tracing it would crash it.
 */
int session_inject_running(struct session *s);
/* The end: the target's stub off and every byte back, with its threads stopped (the children's: children.c). */
void session_remove_inject(struct session *s);

/*
 * attach.c: load the BPF side and attach the plan, stepping down to what
 * the kernel has (uprobe_multi links, then uprobe sessions).  0 or -1
 * (said).  t0: when the session began, for the "attached in" line.
 */
int session_attach(struct session *s, double t0);

/* children.c: --follow-fork, the hooks of the ptrace loop (process/tracee.h) and the end. */
uint32_t session_trace_child(void *arg, pid_t child, uint32_t parent_slot);
void session_on_child_exec(void *arg, struct tracee_child *k);
void session_on_child_exit(void *arg, struct tracee_child *k);
void session_on_child_exiting(void *arg, struct tracee_child *k);
void session_stub_counters(void *arg, uint32_t proc, uint64_t counters[HT_COUNTER_MAX]);
int session_tree_of(void *arg, struct tree_proc **out, size_t *n);
void session_remove_child_stubs(struct session *s);
int session_write_children(struct session *s);

/* walk.c: how the stub walks stacks, and its tables' mapping kept filled; after the tracer is loaded. */
void session_plan_walk(struct session *s);
void session_walk_python(const struct session *s, struct inject *kid);
void session_python_exiting(struct session *s, pid_t pid);
void session_walk_share(struct session *s, struct inject *kid, uint32_t slot);

/* volume.c: snapshots at monitor_run's poll (by volume, SIGUSR1, RSS); called before it runs, and stopped before the last drains. */
void session_watch_start(struct session *s);
void session_watch_stop(struct session *s);

/* write.c: after the stop, every profile asked for and the -v reports.  heaptrace's status. */
int session_write_profiles(struct session *s, struct snapshots *ss);

#endif
