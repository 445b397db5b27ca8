// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What user space decides, and the question every program asks first: is
 * the current process traced, and in which slot?  The settings go into
 * .rodata before load, so the verifier drops the branches they turn off;
 * the stop flag and the followed children change while tracing runs.  They
 * stay together, in this order, because the skeleton lays them out as one
 * struct that the loader fills in one place, and every concern reads some.
 */
#ifndef HT_CONFIG_BPF_H
#define HT_CONFIG_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"

/*
 * A function the verifier checks once, on its own, as a global function:
 * inlined, its paths multiply through every caller's (stub_alloc 13,458
 * instructions verified with them global, 46,304 inlined).  But a global
 * function costs at each call (its arguments through memory, null checks,
 * no constants carried in), and the CFI walk's step is called at every
 * frame: so the uprobes' object (HT_UPROBE_OBJECT: heaptrace.bpf.c built
 * again, for --no-inject and functions left on uprobes) inlines them, and
 * pays its verifier's time only when uprobes are attached (--no-inject's
 * BPF run time a pair, churn: ~1,960 -> ~1,770 ns).
 */
#ifdef HT_UPROBE_OBJECT
#define HT_CHECKED_ONCE static __always_inline
#else
#define HT_CHECKED_ONCE __noinline
#endif

const volatile __u32 target_tgid = 0;
const volatile __u64 page_size = 4096;
const volatile __u32 max_depth = HT_DEFAULT_MAX_DEPTH;
const volatile __u32 stack_mode = HT_STACK_WALK;
const volatile __u64 min_frame_addr = 4096;    /* vm.mmap_min_addr, at least 1 */
const volatile __u64 peak_step = 0;             /* bytes; 0: max(5% of the last at-peak state, 1 MiB) */
const volatile bool follow_fork = false;
const volatile bool multi_links = false;        /* attached by uprobe_multi or session links: bpf_get_func_ip works */
const volatile __u64 sample_rate = 0;           /* --sample-rate bytes; 0: every allocation */
/* Exact mode's events may come through rings (tracer_config.batch): the live filter is kept (live.bpf.h). */
const volatile bool live_filter_on = false;

/*
 * Zeroes, read-only, for a map entry made empty (site_find(), arena_of()...):
 * a zeroed struct built on the stack took up to 256 bytes of a program's
 * 512, and Linux 6.1's verifier takes a map value's pointer where it
 * refuses a plain memory one (a global function's argument).  Sized for
 * the largest such struct (checked where it is used: HT_ZERO()).
 */
const volatile __u64 ht_zeroes[256 / 8] = {};
#define HT_ZERO(type) ({ _Static_assert(sizeof(type) <= sizeof(ht_zeroes), #type " is larger than ht_zeroes"); \
			 (const void *)ht_zeroes; })

/*
 * This CPU's entry of a per-CPU array of one (a program's scratch, off its
 * 512-byte stack); NULL only for the verifier.
 */
#define HT_HERE(map) ({ __u32 __ht_zero = 0; bpf_map_lookup_elem(&(map), &__ht_zero); })

/*
 * Set by user space when tracing stops, before the links are closed: each
 * close waits for a grace period, while the target goes on allocating and
 * freeing, and the profile is to be the heap as it was at the stop.
 */
volatile __u32 tracing_stopped = 0;

/* Set by user space once thread_exit is attached: only then may a free wait for it (free_entry()). */
volatile __u32 thread_exits_seen = 0;

/* Set by user space before the first stub_procs entry: until then no uprobe looks a process up there. */
volatile __u32 stubs_seen = 0;

/* Set by signal_deliver once it noted a restorer: until then a walk looks no thread's up (sigframe.bpf.h). */
volatile __u32 restorers_noted = 0;

/*
 * The allocator descriptors, by attach cookie.  Written, not read-only:
 * a process that executes a program with another allocator gets that
 * object's probes and their descriptors while tracing runs (a slot is
 * written before any link carries its cookie).
 */
volatile struct ht_alloc_spec specs[HT_MAX_SPECS];

/* --follow-fork: children, added by user space while the child is held at its fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_PROCS);
	__type(key, __u32);             /* tgid */
	__type(value, struct ht_proc);
} procs SEC(".maps");

/* Process tgid's slot: 0 for the target, a child's with --follow-fork; -1: not traced. */
static __always_inline int proc_of(__u32 tgid)
{
	if (tracing_stopped)
		return -1;
	if (tgid == target_tgid)
		return 0;
	if (!follow_fork)
		return -1;
	struct ht_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	return p ? (int)(p->slot & (HT_MAX_PROCS - 1)) : -1;
}

/* The current process's slot (proc_of()). */
static __always_inline int proc_slot(void)
{
	return proc_of(bpf_get_current_pid_tgid() >> 32);
}

/* The attach cookie picks the spec; the mask keeps any cookie in bounds for the verifier. */
static __always_inline const volatile struct ht_alloc_spec *spec_of(__u32 i)
{
	return &specs[i & (HT_MAX_SPECS - 1)];
}

#endif /* HT_CONFIG_BPF_H */
