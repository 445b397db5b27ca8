/*
 * CPython built with LTO and PGO (Debian's) compares its allocator
 * tables' slots with the default functions and, when equal, runs an
 * inlined copy of them: no call is left for a probe to see.  While
 * tracing, each such slot holds instead the address of a jump to the same
 * function, in a page of the target's own (mapped once per process, found
 * again by a later heaptrace, never unmapped: a copy of the slot may be
 * kept, by tracemalloc say): the comparisons fail and every allocation
 * calls the probed function.  The allocator is the same; the slots are
 * put back at the end when they still hold the jump.
 *
 * Sampled, with a stub of the session's in the process, a slot points
 * at its function's fast entry instead (pytables_point): the call skips
 * the page's jump and the function's own jump into the stub.  The stub
 * stays mapped for good as the page does, and a later heaptrace that
 * finds a slot pointing into a stub puts its function back first
 * (inject/reclaim.c): a uprobe on the function would not see the calls.
 */
#ifndef HT_PYTABLES_H
#define HT_PYTABLES_H

#include <stdint.h>
#include <sys/types.h>

#include "inject/remote.h"
#include "probe/cpython.h"

#define PYT_MAX 64

struct pytables {
	int n;
	struct pyt_write {
		pid_t pid;
		uint64_t at;            /* the slot in the process */
		uint64_t func;          /* what it held: the function */
		uint64_t jump;          /* what it holds now */
		uint64_t direct;        /* or this: the function's fast entry (0: never) */
	} w[PYT_MAX];
};

/*
 * With every thread of r's process stopped: the inlined slots of t (of
 * objects mapped in it) pointed at jumps.  Says at -v what was done, and
 * why not where not.  Returns how many slots were redirected.
 */
int pytables_redirect(struct pytables *pt, const struct cpy_tables *t, struct remote *r);

/*
 * With every thread of r's process stopped: each slot of it that holds
 * its jump pointed at entry(arg, func) instead, where that is not 0 (the
 * function's fast entry in the session's stub).  Returns how many.
 */
int pytables_point(struct pytables *pt, struct remote *r, uint64_t (*entry)(void *arg, uint64_t func), void *arg);

/* The process executed a new program: its slots went with the old one. */
void pytables_forget(struct pytables *pt, pid_t pid);

/* With every thread of r's process stopped: its slots back to their functions, where they still hold our jumps. */
void pytables_restore(struct pytables *pt, struct remote *r);

/* Processes that have slots to put back, one at a time: the first, or 0. */
pid_t pytables_next_pid(const struct pytables *pt);

#endif
