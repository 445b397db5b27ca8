// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One program per event kind, shared by every allocator entry point:
 * alloc_enter (uprobe), alloc_return (uretprobe), free_enter and
 * reset_enter (uprobes); alloc_session is alloc_enter and alloc_return in
 * one uprobe session, for --sample-rate on kernels that have them.  The
 * attach cookie selects an ht_alloc_spec saying where the request's
 * arguments are.  Everything is aggregated here, per stack; user space only
 * reads the maps when it writes a profile.
 *
 * This file holds the programs; what they share is in headers by concern,
 * so that each can be read and changed on its own: config.bpf.h (settings,
 * which process), counters.bpf.h, request.bpf.h (a spec's arguments),
 * calls.bpf.h (entry to return), account.bpf.h (blocks and counters),
 * stack.bpf.h (capture and interning), unwind.bpf.h (the CFI walk),
 * sigframe.bpf.h (walking through signal frames) and scratch.bpf.h (the
 * capture's per-CPU buffer).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "heaptrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Kernel 6.10+ (uprobe sessions 6.13+); weak: the object still loads without it, alloc_session does not. */
extern bool bpf_session_is_return(void) __ksym __weak;

#include "config.bpf.h"
#include "counters.bpf.h"
#include "request.bpf.h"
#include "account.bpf.h"
#include "calls.bpf.h"
#include "sigframe.bpf.h"

SEC("uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	alloc_entry(ctx, false);
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	alloc_exit(ctx);
	return 0;
}

/*
 * alloc_enter and alloc_return as one uprobe session (kernel 6.13+),
 * loaded as BPF_TRACE_UPROBE_SESSION by user/tracer.c: an entry that
 * returns non-zero skips the return probe, so an unsampled call costs one
 * trap instead of two.
 */
SEC("uprobe")
int alloc_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return()) {
		alloc_exit(ctx);
		return 0;
	}
	return alloc_entry(ctx, true) ? 0 : 1;
}

SEC("uprobe")
int free_enter(struct pt_regs *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;

	__u64 args[8];
	save_args(ctx, args);
	__u64 ptr = eval(&spec_of(bpf_get_attach_cookie(ctx))->ptr, args, 0);
	if (!ptr || inside_alloc_call(ctx))
		return 0;
	free_block(ptr, proc);
	return 0;
}

/*
 * The in-process fast path (stub/): an allocator call or a free that the
 * stub decided to record, reported at its record site.  The record holds
 * the arguments, the result, and the stack and frame pointers at the
 * function's entry; the stack is walked from there, as from a return
 * probe.  The stub decided sampling and nesting already.
 */
struct stub_scratch {
	struct ht_stub_record rec;
	struct pt_regs regs;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stub_scratch);
} stub_scratch SEC(".maps");

static __always_inline struct stub_scratch *stub_record(struct pt_regs *ctx)
{
	__u32 zero = 0;
	struct stub_scratch *s = bpf_map_lookup_elem(&stub_scratch, &zero);

	if (!s || bpf_probe_read_user(&s->rec, sizeof(s->rec), (void *)PT_REGS_PARM1(ctx)))
		return NULL;
	s->rec.spec &= HT_MAX_SPECS - 1;
	/*
	 * Made from inside a call traced by uprobes (an arena allocator
	 * mallocing its chunks, a --sym function): that call is the request.
	 * The stub tells nesting among its own functions itself.
	 */
	struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (c && ((c->depth && s->rec.sp <= c->sp) || nested_in_skipped(c, s->rec.sp, s->rec.spec)))
		return NULL;
	return s;
}

SEC("uprobe")
int stub_alloc(struct pt_regs *ctx)
{
	int proc = proc_slot();
	struct stub_scratch *s;

	if (proc < 0 || !(s = stub_record(ctx)))
		return 0;
	/* The caller's registers just after the call returned: its return address, above it, its frame. */
	__u64 ra = 0;
	bpf_probe_read_user(&ra, sizeof(ra), (void *)s->rec.sp);
	s->regs.ip = ra;
	s->regs.sp = s->rec.sp + 8;
	s->regs.bp = s->rec.fp;
	finish_alloc(ctx, &s->regs, s->rec.func_ip, proc, s->rec.spec, s->rec.args, s->rec.ret,
		     s->rec.flags & HT_STUB_SAMPLED);
	return 0;
}

SEC("uprobe")
int stub_free(struct pt_regs *ctx)
{
	int proc = proc_slot();
	struct stub_scratch *s;

	if (proc < 0 || !(s = stub_record(ctx)))
		return 0;
	__u64 ptr = eval(&spec_of(s->rec.spec)->ptr, s->rec.args, 0);
	if (ptr)
		free_block(ptr, proc);
	return 0;
}

struct reset_ctx {
	__u64 arena;
	__u64 objects;
	__u32 proc;
};

/* Release one (arena, stack) pair's in-use counts from its stack's counters. */
static long reset_site(struct bpf_map *map, struct ht_arena_site_key *key, struct ht_arena_site *a,
		       struct reset_ctx *rc)
{
	if (key->arena != rc->arena || key->proc != rc->proc)
		return 0;

	struct ht_site_key sk = { .stack = key->stack, .proc = rc->proc };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &sk);
	struct inuse_delta d = { -a->inuse_objects, -a->inuse_bytes, -a->est_inuse_objects, -a->est_inuse_bytes };
	if (s)
		site_inuse(s, rc->proc, &d);
	rc->objects += a->inuse_objects;
	bpf_map_delete_elem(map, key);
	return 0;
}

/*
 * An arena reset frees every block allocated from the arena.  Rather than
 * visit every live block, it releases the arena's per-stack totals and
 * starts a new generation: blocks of older generations are dead, and are
 * dropped silently when their address comes back or they are freed.
 */
SEC("uprobe")
int reset_enter(struct pt_regs *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;

	__u64 args[8];
	save_args(ctx, args);
	struct reset_ctx rc = { .arena = eval(&spec_of(bpf_get_attach_cookie(ctx))->arena, args, 0),
				.proc = proc };
	if (!rc.arena)
		return 0;

	struct ht_arena_key ak = { .arena = rc.arena, .proc = proc };
	__u32 *g = bpf_map_lookup_elem(&arenas, &ak);
	if (g) {
		__sync_fetch_and_add(g, 1);
	} else {
		__u32 one = 1;
		if (bpf_map_update_elem(&arenas, &ak, &one, BPF_NOEXIST))
			count(proc, HT_ARENA_MAP_FULL);
	}
	bpf_for_each_map_elem(&arena_sites, reset_site, &rc, 0);
	count(proc, HT_ARENA_RESETS);
	count_n(proc, HT_RESET_OBJECTS, rc.objects);
	return 0;
}

struct exec_ctx {
	__u64 dropped;
	__u32 proc;
};

static long drop_block(struct bpf_map *map, __u64 *key, struct ht_block *b, struct exec_ctx *x)
{
	struct ht_block copy = *b;

	if (ht_live_key_proc(*key) == x->proc && !bpf_map_delete_elem(map, key) && release(&copy, x->proc))
		x->dropped++;
	return 0;
}

/*
 * execve() replaces the heap: every block of the old program is gone
 * without a free.  Release them all, so the new program starts from zero
 * in use (its allocations are traced if it uses the same allocator object).
 */
SEC("tracepoint/sched/sched_process_exec")
int process_exec(void *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;
	struct exec_ctx x = { .proc = proc };
	/* No call of the old program returns; its stack and trampoline are gone. */
	struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (c) {
		c->depth = 0;
		c->skip_sp = 0;
		c->trampoline = 0;
	}
	forget_restorer();
	bpf_for_each_map_elem(&live, drop_block, &x, 0);
	count(proc, HT_EXECS);
	count_n(proc, HT_EXEC_DROPPED, x.dropped);
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &x.proc);
	if (t) {
		__sync_fetch_and_add(&t->execs, 1);
		__sync_fetch_and_add(&t->exec_dropped, x.dropped);
	}
	return 0;
}

/*
 * A signal about to run a handler on a traced thread: the handler's
 * restorer is where a stack walk meets the kernel's signal frame
 * (sigframe.bpf.h).  Every delivery in the system passes here; an
 * untraced process costs one comparison, or one lookup with --follow-fork.
 */
SEC("tp_btf/signal_deliver")
int BPF_PROG(signal_deliver, int sig, struct kernel_siginfo *info, struct k_sigaction *ka)
{
	if (proc_slot() >= 0)
		note_restorer(ka);
	return 0;
}
