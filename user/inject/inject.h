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

#include "inject/remote.h"
#include "heaptrace.h"
#include "stub/stub.h"

struct probe_plan;
struct ring;
struct tracer;

struct inject_fn {
	int probe;                      /* its probe in the plan */
	uint64_t addr;                  /* the function's entry in the target */
	uint32_t len;                   /* bytes displaced, from the entry */
	uint32_t skip;                  /* the jump's offset in them: [skip, len) is written (relocate_skip) */
	uint8_t saved[32];              /* what they were */
	bool patched;
};

struct inject {
	pid_t pid;
	uint64_t sample_rate;
	uint32_t max_live;
	uint64_t base;                  /* the stub's address in the target; 0: none mapped */
	uint64_t data_size;
	uint32_t buckets;
	int file_fd;                    /* heaptrace's descriptor of the stub's file */
	char path[64];                  /* /proc/self/fd/N: where the record sites' uprobes go */
	struct inject_fn fns[STUB_MAX_FNS];
	int n;
	/* A launched command: the dynamic loader's breakpoint, until the allocator is mapped. */
	uint64_t r_brk, r_state;
	uint8_t r_brk_byte;
	bool armed;
	bool done;                      /* installed, or given up: the uprobes took over */
	bool enabled;                   /* the stub is on in this process */
	bool shared;                    /* a child sharing its parent's memory (vfork): the parent's stub */
	/*
	 * A process adopted running (procstub.c): the target's functions, all
	 * or none; the plan (the target's) is left as it is, and why says why not.
	 */
	bool whole;
	char why[200];
	struct stub_counters seen;      /* the stub's counters as last read */
	/* inject_check_delivery(): when the stub first recorded a call (0: not yet seen), and what came of it. */
	double recorded_at;
	bool delivered, undelivered;
	/* The stub's own stack walk (stub/unwind.c, inject/share.c), set by the caller before installing: */
	uint32_t walk;                  /* enum stub_walk_mode */
	uint32_t max_depth;
	uint64_t min_frame_addr;
	uint32_t share_rows;            /* CFI rows the tables' mapping holds (the BPF array's); 0: none */
	/*
	 * Told of heaptrace's side of the tables' mapping (rows at
	 * HT_SHARE_ROWS_OFF) once installed, with the process's memory map
	 * then; NULL when it goes.
	 */
	void (*on_share)(void *arg, struct ht_share *map, uint32_t rows, const char *maps);
	void *on_share_arg;
	int share_fd;
	struct ht_share *share_map;     /* heaptrace's side; the target's is at share_addr */
	uint64_t share_size, share_addr;
	uint64_t restorer;              /* libc's signal restorer in the process, 0: not known */
	/* Exact mode's batching (inject/ring.c): the process's ring, when on (NULL: none). */
	struct ring *ring;
	bool batching;
	struct tracer *ring_tr;         /* the drain that has the ring; NULL: none */
};

/*
 * Give the stub the malloc-family functions of the plan's primary object
 * that it can take (marks their probes p->stub).  Returns how many.
 */
int inject_plan(struct inject *in, struct probe_plan *plan, pid_t pid, uint64_t sample_rate, uint32_t max_live);

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
 * A launched command stopped at its exec: where the dynamic loader tells
 * debuggers that its objects are mapped (r_brk), a breakpoint.  The
 * program's own code has not run yet.  0, or -1: install now (no loader).
 */
int inject_arm(struct inject *in, struct remote *r);

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

/*
 * Before uprobes go on a process's malloc family: each function that still
 * jumps into a heaptrace stub (an earlier heaptrace was SIGKILLed, or the
 * process was forked from one that had the jump) gets its file's bytes
 * back; a uprobe on a jump would break it (inject.c says how).  _reclaim:
 * every thread of r stopped; _held: a child held before its first
 * instruction (not written when it shares parent's memory: vfork);
 * _running: looked at without stopping, stopped (remote_stop
 * with traced, arg) only when there is something to restore.  Each returns
 * how many functions jumped, or -1 when one still does (printed).
 */
int inject_reclaim(struct remote *r, const struct probe_plan *plan);
int inject_reclaim_held(pid_t pid, const struct probe_plan *plan);
int inject_reclaim_running(pid_t pid, const struct probe_plan *plan, bool (*traced)(void *arg, pid_t tid), void *arg);

/* Whether two processes share their memory (a vfork child and its parent): kcmp(KCMP_VM). */
bool inject_shares_memory(pid_t a, pid_t b);

/* The stub's losses, added to the BPF side's counters (read while the process lives, then the last reading). */
void inject_counters(struct inject *in, uint64_t counters[HT_COUNTER_MAX]);

/*
 * Do the stub's recorded calls reach heaptrace?  c: the process's
 * counters; now: seconds.  True, once, when a second went by after the
 * stub first recorded a call and nothing of it arrived (stub_undelivered:
 * the kernel's uprobes do not fire at the record sites, the drain does not
 * run): the profile would be empty.
 */
bool inject_check_delivery(struct inject *in, const uint64_t c[HT_COUNTER_MAX], double now);

/* The process executed a new program: its stub is gone; install again (inject_arm) for the same functions. */
void inject_reset(struct inject *in);

void inject_free(struct inject *in);

#endif
