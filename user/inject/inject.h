/*
 * The in-process fast path: heaptrace maps a small stub (stub/) into the
 * target, near the allocator, and redirects the entry of each malloc-family
 * function to it with a 5-byte jump.  The stub decides in the target
 * whether a call is recorded (with --sample-rate most are not, and cost a
 * few instructions and no trap); a recorded call reaches one record site,
 * a 5-byte nop carrying a uprobe, which the kernel turns into a call into
 * its uprobe trampoline.  Functions the stub cannot take keep their
 * uprobes.  See docs/fast-path.md.
 */
#ifndef HT_INJECT_H
#define HT_INJECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"
#include "inject/counters.h"
#include "inject/reclaim.h"
#include "inject/remote.h"
#include "inject/state.h"

/*
 * Give the stub the malloc-family functions of the plan's primary object
 * that it can take (marks their probes p->stub).  Returns how many.
 */
int inject_plan(struct inject *in, struct probe_plan *plan, pid_t pid, uint64_t sample_rate, uint32_t max_live);

/*
 * The same for the plan's probes from on (a program the target executed
 * brought them), added to the stub's functions: installed with the next
 * stub, in the new image.  Returns how many.
 */
int inject_plan_more(struct inject *in, struct probe_plan *plan, int from);

/*
 * With every thread of the target stopped (r): map the stub, attach the
 * record sites' programs, redirect the functions, turn it on.  Functions
 * it could not take get p->stub cleared (the caller attaches their
 * uprobes).  0, or -1 when nothing was installed (reason at -v).
 */
int inject_install(struct inject *in, struct remote *r, struct probe_plan *plan, struct tracer *tr);

/*
 * With every thread stopped: turn the stub off and put every byte back.
 * The stub stays mapped (a thread may still be inside it, or return into
 * it from the original function); it then only jumps to the originals.
 */
void inject_remove(struct inject *in, struct remote *r);

/*
 * The fast entry of the function at func in the process (struct inject *
 * arg), where a CPython table slot may point (pytables_point()); 0: none.
 */
uint64_t inject_fast_entry_of(void *arg, uint64_t func);

/*
 * A launched command stopped at its exec: where the dynamic loader tells
 * debuggers that its objects are mapped (r_brk), a breakpoint.  The
 * program's own code has not run yet.  0, or -1: install now (no loader).
 */
int inject_arm(struct inject *in, struct remote *r);   /* arm.c, as inject_on_trap */

/*
 * A followed child stopped at its exec: the loader's _dl_debug_state as a
 * file offset of path, where the caller hooks bpf/heaptrace.bpf.c's
 * loader_state (which sends HT_LOADER_SIGNAL) rather than writing a
 * breakpoint: nothing is left in the process were heaptrace to die.  0, or
 * -1: a static program, or a loader without the symbols.
 */
int inject_arm_hook(struct inject *in, char *path, size_t len, uint64_t *offset);

/*
 * The child of inject_arm_hook() stopped with HT_LOADER_SIGNAL.  1: ours
 * (the caller drops the signal); once the loader is consistent no longer
 * armed, with the stub in when the target's allocator is mapped (enabled),
 * else not (the caller gives it uprobes).  0: not ours.
 */
int inject_on_loader(struct inject *in, pid_t tid, struct probe_plan *plan, struct tracer *tr);

/*
 * The command stopped with SIGTRAP.  1: at our breakpoint (handled: the
 * stub is installed once the allocator is mapped; resume the thread without
 * a signal), 0: not ours.
 */
int inject_on_trap(struct inject *in, pid_t tid, struct probe_plan *plan, struct tracer *tr);

/*
 * --follow-fork: pid, a child of the process of parent, stopped before its
 * first instruction, inherited the redirected functions and the stub, its
 * data zeroed (so disabled).  Give it a stub of its own: the record sites'
 * bytes as the file has them, their uprobes for pid, its data, enabled.  A
 * child sharing the parent's memory (vfork) gets only the record sites'
 * uprobes.  0: done; 1: not done, its functions are the file's again
 * (attach their uprobes); -1: not done and they still jump (printed).
 */
int inject_child(struct inject *kid, const struct inject *parent, pid_t pid, struct tracer *tr);

/* The process executed a new program: its stub is gone; install again (inject_arm) for the same functions. */
void inject_reset(struct inject *in);

void inject_free(struct inject *in);

#endif
