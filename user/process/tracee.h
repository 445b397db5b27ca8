/*
 * The ptrace side of tracing, in one loop.  A launched command is
 * ptrace-seized so that it stops at its exit, while its memory map can
 * still be read.  With --follow-fork heaptrace is the tracer of every thread
 * of the target with fork/clone events on, so a forked child is held
 * stopped until its probes are attached: it cannot allocate unseen.
 */
#ifndef HT_TRACEE_H
#define HT_TRACEE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/target.h"

struct tracee_child {
	pid_t pid;
	pid_t parent;
	uint32_t slot;          /* the BPF side's process slot; 0: not traced */
	char *maps;             /* /proc/PID/maps as last read while it lived */
	char *name;             /* the program it runs, as its user knows it (proc_program_name) */
	bool exited;
	bool maps_final;        /* maps read at its exit's stop: not read again (struct target's) */
};

/*
 * Called with the child stopped before its first instruction.  Returns its
 * process slot, or 0 when it cannot be traced (the reason printed).
 */
typedef uint32_t (*tracee_fork_fn)(void *arg, pid_t child, uint32_t parent_slot);

struct tracee_tid {
	pid_t tid;
	bool held;              /* a new process's first stop, waiting for its parent's fork event */
};

struct tracee {
	struct target *t;
	bool follow;                    /* --follow-fork */
	/*
	 * -p: every thread of the target is ours (new threads too), so that
	 * the program it executes is followed as a launched command's is;
	 * forks only with follow.
	 */
	bool all;
	bool seized;                    /* we are the target's ptrace tracer */
	/* Several -p, --cgroup: tracing goes on past the target's end while another traced process lives. */
	bool outlive;
	tracee_fork_fn on_fork;
	void *arg;
	struct tracee_child *kids;
	size_t n_kids, cap_kids;
	/*
	 * Held while kids (the array, a slot, maps, a name) change: --merge's
	 * --http thread reads them.  The ptrace loop's own reads need it not.
	 */
	pthread_mutex_t lock;
	struct tracee_tid *tids;        /* every task we have seen stop */
	size_t n_tids, cap_tids;
	size_t not_followed;            /* children left untraced (no slot, attach failed) */
	/*
	 * The stops of the in-process fast path: the target's exec (the new
	 * image is mapped, nothing of it has run), and a signal's delivery to
	 * any traced thread, which on_signal takes (returns true: not
	 * delivered) when it is heaptrace's (the target's breakpoint, a
	 * followed child's loader hook).
	 */
	void (*on_exec)(void *arg, pid_t tid);
	bool (*on_signal)(void *arg, pid_t tid, int sig);
	/*
	 * A followed child's exec, stopped before the new program's first
	 * instruction, its maps and name read afresh (k).  Exec events are
	 * asked for when on_exec or on_child_exec is set.
	 */
	void (*on_child_exec)(void *arg, struct tracee_child *k);
	/* A followed child's thread group ended (its leader was reaped); may be NULL. */
	void (*on_child_exit)(void *arg, struct tracee_child *k);
	/* A followed child's leader at its exit stop: its memory is still there; may be NULL. */
	void (*on_child_exiting)(void *arg, struct tracee_child *k);
	/* The target's leader at its exit stop, its memory still there; may be NULL. */
	void (*on_exiting)(void *arg);
	/* Called by the monitor at each maps refresh (at most a second apart); may be NULL.  True: stop tracing. */
	bool (*on_poll)(void *arg);
	void *hook_arg;
};

/*
 * A launched command, still held before its execve: seize it.  Without
 * --follow-fork a failure only costs the memory map at its exit (said
 * with -v); with it, it is an error.  0 or -1 (printed).
 */
int tracee_seize_launched(struct tracee *tc);

/*
 * -p: become the tracer of every thread of the target.  0 or -1 (printed);
 * without --follow-fork a thread that cannot be seized is only said (-v),
 * since what is lost is an exec it might make.
 */
int tracee_seize_all(struct tracee *tc);

/*
 * Handle what waitpid reports, without blocking or (wait) until the target
 * ends: exit stops (capture the maps, let it go), group stops (stay
 * stopped, as without us), signals (delivered), forks (--follow-fork), and
 * the end (sets the target's exited and status).  Job control reaches the
 * tracees as without us: a group-stop stays stopped until a SIGCONT, and
 * the stop that reports the SIGCONT is continued.
 */
void tracee_reap(struct tracee *tc, bool wait);

/*
 * A running process beside the target (-p's others, a cgroup's, a
 * descendant already running under --follow-fork): every thread seized
 * with the target's options, and a child record (parent: its parent, or 0)
 * with no slot yet.  0, or -errno with nothing of it kept (-EEXIST: it is
 * traced already).
 */
int tracee_adopt(struct tracee *tc, pid_t pid, pid_t parent);
/* An adopted process's slot (0: it could not be traced; it stays seized, untraced, until heaptrace ends). */
void tracee_adopted(struct tracee *tc, pid_t pid, uint32_t slot);

/* Read the maps of children still alive (before the profiles are written). */
void tracee_refresh_maps(struct tracee *tc);

/* Does a traced process other than the target live? */
bool tracee_others_alive(const struct tracee *tc);

/* Is tid a task heaptrace is the ptrace tracer of (seized, or auto-attached and seen)? */
bool tracee_has(const struct tracee *tc, pid_t tid);

void tracee_free(struct tracee *tc);

#endif
