// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stacks through the kernel's signal frames.  A signal handler returns into
 * the restorer (glibc's __restore_rt, `mov $15,%rax; syscall`), and above
 * that return address the kernel left the interrupted registers (struct
 * rt_sigframe: the ucontext, HT_SIGFRAME_* in heaptrace.h).  Neither the
 * handler's frame pointer nor a CFA-8 rule leads past it: the walks must
 * recognise the restorer and continue from the saved rip, rsp and rbp.
 *
 * The CFI walk knows the restorer from its object's table (an
 * HT_CFA_SIGNAL row).  The frame-pointer walk has no table, and libc keeps
 * __restore_rt out of its dynamic symbols, so the restorer comes from the
 * kernel: at each delivery of a signal to a handler, the program on the
 * signal_deliver tracepoint notes the handler's sa_restorer for the thread
 * it is delivered to, whose stack the frame is on.
 */
#ifndef HT_SIGFRAME_BPF_H
#define HT_SIGFRAME_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"
#include "config.bpf.h"

#define HT_SA_RESTORER 0x04000000       /* <asm/signal.h>: x86-64 requires it of every handler */

/* Per thread: the restorer of the last handler delivered to it, 0: none yet. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} sig_restorers SEC(".maps");

/* A handler is about to run on the current thread (signal_deliver): note its restorer. */
static __always_inline void note_restorer(struct k_sigaction *ka)
{
	__u64 handler = (__u64)BPF_CORE_READ(ka, sa.sa_handler);
	__u64 flags = BPF_CORE_READ(ka, sa.sa_flags);
	__u64 *r;

	/* SIG_DFL (0) and SIG_IGN (1) run no handler: no frame. */
	if (handler <= 1 || !(flags & HT_SA_RESTORER))
		return;
	r = bpf_task_storage_get(&sig_restorers, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (r) {
		*r = (__u64)BPF_CORE_READ(ka, sa.sa_restorer);
		/* Before the handler runs: its allocations' walks see it. */
		restorers_noted = 1;
	}
}

/* The current thread's restorer, 0 when no handler ran on it since tracing started. */
static __always_inline __u64 current_restorer(void)
{
	__u64 *r = restorers_noted ? bpf_task_storage_get(&sig_restorers, bpf_get_current_task_btf(), 0, 0) : NULL;

	return r ? *r : 0;
}

/* The interrupted registers the walks need, as the sigcontext holds them from rbp (HT_SIGFRAME_RBP) on. */
struct sigframe_regs {
	__u64 rbp, rbx, rdx, rax, rcx, rsp, rip;
};

_Static_assert(HT_SIGFRAME_RSP - HT_SIGFRAME_RBP == 40 && HT_SIGFRAME_RIP - HT_SIGFRAME_RBP == 48,
	       "struct sigframe_regs follows struct sigcontext");

/*
 * The registers of the signal frame whose ucontext is at uc: one read (a
 * read per register, each from the stack's copy or not, would multiply
 * the verifier's paths through every walk).
 */
static __always_inline long read_sigframe(__u64 uc, struct sigframe_regs *g)
{
	return bpf_probe_read_user(g, sizeof(*g), (void *)(uc + HT_SIGFRAME_RBP));
}

/* execve() drops the handlers: a restorer of the old program is no address of the new one. */
static __always_inline void forget_restorer(void)
{
	bpf_task_storage_delete(&sig_restorers, bpf_get_current_task_btf());
}

#endif /* HT_SIGFRAME_BPF_H */
