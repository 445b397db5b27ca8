/*
 * The fast path's state in one process, a header of its own: inject.c and
 * arm.c drive it, and the helpers they call (place.c, ring.c, share.c,
 * spec_stub.c) get it passed in and include this, not inject.h.
 */
#ifndef HT_INJECT_STATE_H
#define HT_INJECT_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"
#include "stub/stub.h"

struct cpy_frames;
struct pytables;

struct probe_plan;
struct ring;
struct tracer;

struct inject_fn {
	int probe;                      /* its probe in the plan */
	uint64_t addr;                  /* the function's entry in the target */
	uint32_t len;                   /* bytes displaced, from the entry */
	uint32_t skip;                  /* the jump's offset in them: [skip, len) is written (relocate_skip) */
	uint8_t saved[32];              /* what they were */
	bool far;                       /* beyond the stub's reach: through the page of jumps (inject/jumps.h) */
	bool fast;                      /* its patch leads to its fast entry (inject/fast.h), not entry_i */
	uint64_t direct;                /* fast: that entry past the undo, where a slot or a wrapper may go */
	bool patched;
};

struct inject {
	pid_t pid;
	uint64_t sample_rate;
	uint32_t max_live;
	uint64_t base;                  /* the stub's address in the target; 0: none mapped */
	uint64_t jumps;                 /* the page of jumps' (inject/jumps.h); 0: none */
	uint64_t far_lo, far_hi;        /* the span of the functions it serves */
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
	bool hooked;                    /* armed by a uprobe on r_brk (inject_arm_hook), not a breakpoint */
	/*
	 * Set: armed only to learn when the loader is done (no stub:
	 * --no-inject with CFI tables), told here rather than installing.
	 */
	void (*on_loaded)(void *arg);
	void *on_loaded_arg;
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
	struct stub_counters earlier;   /* the stubs of the process's earlier programs (exec), as last read */
	uint64_t earlier_undelivered;
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
	void (*on_share)(void *arg, const struct inject *in, struct ht_share *map, uint32_t rows, const char *maps);
	void *on_share_arg;
	uint32_t slot;                  /* the process's slot, told to on_share: each has its tables' index */
	int share_fd;
	struct ht_share *share_map;     /* heaptrace's side; the target's is at share_addr */
	uint64_t share_size, share_addr;
	uint64_t restorer;              /* libc's signal restorer in the process, 0: not known */
	/*
	 * Python frames (stub/python.c), set by the caller: what the
	 * interpreter's file says (NULL: none); on_python is told once the
	 * stub of this process reads them (its PyCode_Type in py_code_type).
	 */
	const struct cpy_frames *pyf;
	struct pytables *pyt;           /* CPython's slots redirected (inject/pytables.h), pointed at the fast entries; NULL: none */
	struct stub_py py;
	uint64_t py_code_type;
	void (*on_python)(void *arg, const struct inject *in);
	void *on_python_arg;
	/* Exact mode's batching (inject/ring.c): the process's ring, when on (NULL: none). */
	struct ring *ring;
	bool batching;
	struct tracer *ring_tr;         /* the drain that has the ring; NULL: none */
};

/* Where function i's patch (or its slot on the page of jumps) leads: its fast entry, or entry_i. */
static inline uint64_t inject_entry(const struct inject *in, int i)
{
	return in->base + (in->fns[i].fast ? STUB_FAST_OFF + (uint64_t)i * STUB_FAST_SIZE :
					     STUB_TRAMP_OFF + (uint64_t)i * STUB_TRAMP_SIZE);
}

#endif
