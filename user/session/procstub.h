/*
 * The fast path of a process adopted running (-p's others, a cgroup's,
 * running descendants under --follow-fork): a stub of its own, as a
 * followed child has, or uprobes on the stub's functions.
 */
#ifndef HT_PROCSTUB_H
#define HT_PROCSTUB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct session;

/*
 * pid, in slot, its other probes attached: a stub of its own for the
 * functions of the target's (s->kin[slot]), else their uprobes for it and
 * one line saying why.  0, or -1 when even the uprobes failed (printed).
 */
int procstub_attach(struct session *s, pid_t pid, uint32_t slot);

/*
 * --follow-fork: pid, in slot, executed a new program (stopped at the
 * exec): a stub of its own (s->kin[slot]) waits for its loader, hooked by
 * a uprobe that signals it (HT_LOADER_SIGNAL), and goes in at
 * procstub_on_signal() once the target's allocator is mapped.  0: armed;
 * -1: not (no stub to model it on, a static program, the signal blocked):
 * the caller attaches uprobes.
 */
int procstub_arm(struct session *s, pid_t pid, uint32_t slot);

/*
 * tid stopped with signal sig: an exec'd child's hook (procstub_arm),
 * handled (drop the signal): its stub in once its loader is done, else
 * its uprobes.  False: not one of ours.
 */
bool procstub_on_signal(struct session *s, pid_t tid, int sig);

/* Does HT_LOADER_SIGNAL reach pid (it does not block it)? */
bool procstub_signal_reaches(pid_t pid);

/* Was tid's pending signal the kernel's (loader_state's), not a process's? */
bool procstub_from_kernel(pid_t tid);

/*
 * slot's hook closed and its stub no longer armed (its process exits or
 * executes again, or tracing stops): no later signal is taken for it.
 */
void procstub_disarm(struct session *s, uint32_t slot);

/*
 * A process whose memory is that of one with a stub of ours (a vfork child
 * caught before its exec): that process's pid, else 0.  Not to be adopted:
 * undoing "an earlier heaptrace's jumps" there would undo our own.
 */
pid_t procstub_shares(const struct session *s, pid_t pid);

#endif
