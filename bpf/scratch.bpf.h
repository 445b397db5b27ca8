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

/* Too big for the 512-byte BPF stack: per-CPU scratch for one stack capture. */
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
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

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
