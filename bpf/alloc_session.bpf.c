// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * alloc_enter and alloc_return as one uprobe session (kernel 6.13+),
 * loaded as BPF_TRACE_UPROBE_SESSION by user/tracer/tracer.c: an entry that
 * returns non-zero skips the return probe, so an unsampled call costs one
 * trap instead of two.
 *
 * An object of its own, loaded only when allocators get uprobe sessions,
 * with heaptrace.bpf.c's maps (the same headers, the same maps and
 * globals, shared by fd): its kfunc makes libbpf read the kernel's whole
 * BTF, which heaptrace.bpf.c is kept free of.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "heaptrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Kernel 6.10+ (uprobe sessions 6.13+); weak: a kernel without it fails this object's load alone. */
extern bool bpf_session_is_return(void) __ksym __weak;

#include "config.bpf.h"
#include "counters.bpf.h"
#include "request.bpf.h"
#include "account.bpf.h"
#include "calls.bpf.h"

SEC("uprobe")
int alloc_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return()) {
		alloc_exit(ctx);
		return 0;
	}
	return alloc_entry(ctx, true) ? 0 : 1;
}
