// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The per-CPU scratch of one stack capture: the stack being built, one bulk
 * copy of the user stack that the walks read frames from, and the CFI
 * walk's row cache.  It sits below both stack.bpf.h and unwind.bpf.h
 * because both walks write into it, and the CFI walk's bpf_loop callback
 * finds it through the map, not through its caller.
 */
#ifndef HT_SCRATCH_BPF_H
#define HT_SCRATCH_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"

/*
 * Rows found for recent pcs, per CPU (find_row, unwind.bpf.h): a
 * program's allocation stacks repeat, and a hit saves a binary search of
 * ~17 steps.  Tables are append-only, so an (object, pc) pair always finds
 * the same row: entries never go stale.
 */
#define ROW_CACHE 512

struct row_cache {
	__u32 rel;              /* pc as an ELF address */
	__u32 row_begin;        /* the object: its rows start there */
	struct ht_unwind_row row;
};

/* The frame-pointer walk between frames . */
struct fp_walk {
	__u64 sp, fp, copied;   /* the bulk copy of the stack: [sp, sp + copied) */
	__u64 restorer;         /* the thread's signal restorer (sigframe.bpf.h), 0: none */
	__u64 interrupted;      /* past a signal frame: the interrupted pc, the next frame */
	__u64 hash;             /* of the frames so far (ht_stack_hash_step) */
	__u32 n;
	__u32 flags;
};

/* The CFI walk between frames (unwind.bpf.h). */
struct unwind {
	__u64 pc, sp, fp;
	__u64 func_ip;          /* the probed function's address (uprobe_multi), 0: unknown */
	__u32 spec;
	__u64 sp0, copied;      /* the bulk copy of the stack: [sp0, sp0 + copied) */
	__u32 proc;
	__u32 n;
	__u32 flags;
	__u32 last;             /* the module of the previous frame: stacks stay in few objects */
	__u32 other;            /* the module before last's: a stack crosses between two (the program, libc) */
	__u64 restorer;         /* the thread's signal restorer (sigframe.bpf.h), 0: none */
	__u64 hash;             /* of the frames so far (ht_stack_hash_step) */
};

/* module_index()'s search of a process's modules for a pc (unwind.bpf.h). */
struct module_search {
	__u64 pc;
	__u32 proc;
	__u32 n;
	int found;
};

/* What bpf_find_vma found for a pc (unwind.bpf.h's add_module()). */
struct vma_info {
	__u64 start, end, pgoff;
	struct ht_unwind_object_key key;
	bool file;
};

/*
 * Too big for the 512-byte BPF stack: per-CPU scratch for one stack
 * capture.  The walks' states are here too, not on the stack: where the
 * kernel gives BPF no private stack, a program's deepest call chain has
 * 512 bytes in all, and the CFI walk's chain (capture_walk() >
 * unwind_frame() > module_index() > a bpf_loop callback) took 416 of them
 * with its state on the stack.  bpf_loop's context must be on the stack,
 * so their callbacks are given none and find the state here.
 */
struct scratch {
	/*
	 * st holds a stack walked already (the stub's, stub/unwind.c): the
	 * next capture stores it as it is.  Set and cleared around one event.
	 */
	__u32 preset;
	__u64 preset_hash;      /* the stub's hash of the frames */
	__u64 preset_addr;      /* where the stub's frames are (pcs[0] is in st already); 0: all in st */
	struct ht_stack st;
	__u64 copy[HT_STACK_COPY_BYTES / 8];
	struct row_cache rows[ROW_CACHE];
	/* The CFI walk's last two modules when it ended (unwind.bpf.h): where the next walk looks first. */
	__u32 mod_last, mod_other;
	struct fp_walk fw;              /* the frame-pointer walk's (stack.bpf.h) */
	struct unwind uw;               /* the CFI walk's (unwind.bpf.h) */
	struct module_search ms;        /* module_index()'s */
	struct vma_info vma;            /* a pc's mapping, while add_module() finds it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* This CPU's scratch (NULL only for the verifier: a per-CPU array's one entry is always there). */
static __always_inline struct scratch *scratch_here(void)
{
	return HT_HERE(scratch);
}

/* One bulk copy of the stack above sp, as much as is mapped: sc->copy holds the bytes read. */
static __always_inline __u64 copy_stack(struct scratch *sc, __u64 sp)
{
	if (!bpf_probe_read_user(sc->copy, HT_STACK_COPY_BYTES, (void *)sp))
		return HT_STACK_COPY_BYTES;
	/* The copy ran past the top of the stack: the rest of sp's page is always there. */
	__u64 copied = 4096 - (sp & 4095);
	if (copied > HT_STACK_COPY_BYTES ||
	    bpf_probe_read_user(sc->copy, copied & (HT_STACK_COPY_BYTES - 1), (void *)sp))
		return 0;
	return copied;
}

#endif /* HT_SCRATCH_BPF_H */
