// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The trap+stack floor: what any stack-aggregating uprobe tracer must pay at
 * heaptrace's probe sites.  The entry and free programs do nothing, so their
 * cost is the trap and the BPF dispatch; the return program does the one thing
 * heaptrace cannot avoid, a frame-pointer walk hashed into a stack map.
 * Everything heaptrace does on top (call map, live map, per-stack counters) is
 * its measured overhead over this floor.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Sized and shaped like heaptrace's own stack map (HT_MAX_STACK_DEPTH frames). */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 65536);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} stacks SEC(".maps");

SEC("uprobe")
int floor_enter(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_return(struct pt_regs *ctx)
{
	bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	return 0;
}

SEC("uprobe")
int floor_free(struct pt_regs *ctx)
{
	return 0;
}
