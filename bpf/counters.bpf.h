// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The event and loss counters that user space reports (HT_* in
 * heaptrace.h).  Every concern counts what it drops, the stack walkers as
 * much as the accounting, so the counters sit below them all: a walker
 * does not depend on the accounting to say that it lost a stack.
 */
#ifndef HT_COUNTERS_BPF_H
#define HT_COUNTERS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"

/*
 * HT_COUNTER_MAX counters per process slot: slot * HT_COUNTER_MAX +
 * counter, so that each profile reports its own process's losses and
 * counting stays one lookup in one array.  Sized by the loader: one slot
 * without --follow-fork.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HT_MAX_PROCS * HT_COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count_n(__u32 proc, __u32 which, __u64 n)
{
	__u32 key = proc * HT_COUNTER_MAX + which;
	__u64 *v = bpf_map_lookup_elem(&counters, &key);

	if (v)
		*v += n;
}

/* Count an event of the process in slot proc (proc_slot()). */
static __always_inline void count(__u32 proc, __u32 which)
{
	count_n(proc, which, 1);
}

#endif /* HT_COUNTERS_BPF_H */
