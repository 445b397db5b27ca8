/*
 * --follow-fork: the target's descendants.  heaptrace is the ptrace tracer
 * of the target's threads with fork/clone events on, so a forked child is
 * held stopped until its probes are attached: it cannot allocate unseen.
 */
#ifndef HT_FOLLOW_H
#define HT_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target;

struct follow_child {
	pid_t pid;
	pid_t parent;
	uint32_t slot;          /* the BPF side's process slot; 0: not traced */
	char *maps;             /* /proc/PID/maps as last read while it lived */
	bool exited;
};

/*
 * Called with the child stopped before its first instruction.  Returns its
 * process slot, or 0 when it cannot be traced (the reason printed).
 */
typedef uint32_t (*follow_fork_fn)(void *arg, pid_t child, uint32_t parent_slot);

struct follow_tid {
	pid_t tid;
	bool held;              /* a new process's first stop, waiting for its parent's fork event */
};

struct follow {
	follow_fork_fn on_fork;
	void *arg;
	struct follow_child *kids;
	size_t n_kids, cap_kids;
	struct follow_tid *tids;        /* every task we have seen stop */
	size_t n_tids, cap_tids;
	size_t not_followed;            /* children left untraced (no slot, attach failed) */
};

/* The ptrace options for the target: exit stops, and fork/clone events. */
int follow_ptrace_options(void);

/* A task we already trace (the launched command). */
void follow_track(struct follow *f, pid_t tid);

/* -p mode: become the tracer of every thread of t->pid.  0 or -1 (printed). */
int follow_seize(struct target *t);

/* Handle pending ptrace stops of every tracee (see target_reap). */
void follow_reap(struct target *t, bool wait);

/* Read the maps of children still alive (before the profiles are written). */
void follow_refresh_maps(struct follow *f);

void follow_free(struct follow *f);

#endif
