// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What a per-CPU scratch area costs beside the stack it replaced: heaptrace's
 * programs keep their walk states and records in one-entry per-CPU arrays
 * (bpf/scratch.bpf.h, HT_HERE) because no kernel before 6.13 gives them more
 * than 512 bytes of stack.  Each program here touches a 64-byte area STEPS
 * times, as a walk's step does: through a lookup of a per-CPU array, or
 * through a pointer to its caller's stack (bpf_loop's context).  bench/run.sh
 * runs both with BPF_PROG_TEST_RUN and prints the difference a step.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define STEPS 1024

struct area {
	__u64 v[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct area);
} area_map SEC(".maps");

static long percpu_step(__u32 i, void *unused)
{
	__u32 zero = 0;
	struct area *a = bpf_map_lookup_elem(&area_map, &zero);

	if (!a)
		return 1;
	a->v[i & 7] += i;
	return 0;
}

static long stack_step(__u32 i, struct area *a)
{
	a->v[i & 7] += i;
	return 0;
}

SEC("tc")
int percpu_area(struct __sk_buff *skb)
{
	bpf_loop(STEPS, percpu_step, NULL, 0);
	return 0;
}

SEC("tc")
int stack_area(struct __sk_buff *skb)
{
	struct area a = {};

	bpf_loop(STEPS, stack_step, &a, 0);
	return a.v[1] & 1;
}
