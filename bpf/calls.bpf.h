// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-thread state between an allocator's entry and its return: the
 * arguments (gone by the return), the nesting (allocators call and
 * tail-call each other, and only the outermost call is the program's
 * request), the --sample-rate countdown and the entry's decision, and what
 * uprobe sessions need to recognise calls nested in one whose return was
 * skipped.  Entry and return meet only here; the probes in heaptrace.bpf.c
 * say which event fired, and account.bpf.h what it does to the counters.
 */
#ifndef HT_CALLS_BPF_H
#define HT_CALLS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "heaptrace.h"
#include "config.bpf.h"
#include "counters.bpf.h"
#include "request.bpf.h"
#include "account.bpf.h"

/* Task storage: found from the task itself, no hashing, and freed when the thread exits. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ht_call);
} calls SEC(".maps");

/* Processes with a stub: where its nesting table is (user/inject/inject.c writes it before any call reaches the stub). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_PROCS);
	__type(key, __u32);             /* tgid */
	__type(value, struct ht_stub_proc);
} stub_procs SEC(".maps");

/*
 * Is the thread inside a call the stub called, entered at or above sp?
 * The stub's functions are told apart from their nested calls by the stub
 * alone; a call that keeps uprobes, made inside one of them, learns it
 * here.  One read when no thread is inside such a call (the common case
 * between calls), at most HT_STUB_PROBES more.
 */
static __always_inline bool in_stub_call(__u64 sp)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, active = 0;
	/* No stub in any process (--no-inject): no lookup (a hash miss at each uprobe's call). */
	struct ht_stub_proc *p = stubs_seen ? bpf_map_lookup_elem(&stub_procs, &tgid) : NULL;

	if (!p || bpf_probe_read_user(&active, sizeof(active), (void *)p->active) || !active)
		return false;
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 tp = BPF_CORE_READ(task, thread.fsbase);
	__u32 h = ht_stub_depth_hash(tp);
	for (int i = 0; i < HT_STUB_PROBES; i++) {
		struct ht_stub_depth d;
		__u64 at = p->depth + ((h + i) % HT_STUB_DEPTH_SLOTS) * sizeof(d);
		if (bpf_probe_read_user(&d, sizeof(d), (void *)at))
			return false;
		if (d.thread == tp && d.sp && sp <= d.sp)
			return true;
	}
	return false;
}

/*
 * glibc empties a thread's cache of freed chunks (tcache) when the thread
 * exits: tcache_thread_shutdown() calls free() on every chunk still in it,
 * blocks the program freed long before (their frees were counted then),
 * and last on the cache itself, which it allocated with _int_malloc, never
 * through malloc.  Those frees match no block, yet nothing was lost: 9 per
 * thread of t_threads, for instance.  No exported symbol marks that code;
 * what marks it is a free called from the allocator's own object after
 * which the thread makes no other allocator call before it exits.  So such
 * an unmatched free is held in the thread's state: a worker thread's exit
 * counts what it holds as thread_exit_frees (the main thread never runs
 * that code), any other call of the thread, an exec or the main thread's
 * exit count it as unmatched_frees.
 */
static __always_inline bool from_allocator(__u64 sp, __u64 func_ip, __u32 spec)
{
	const volatile struct ht_alloc_spec *s = spec_of(spec);
	__u64 ra, bias = func_ip - s->probe_vaddr;

	if (!thread_exits_seen || !s->text_hi || !func_ip || bpf_probe_read_user(&ra, sizeof(ra), (void *)sp))
		return false;
	return ra - bias >= s->text_lo && ra - bias < s->text_hi;
}

/* What the thread held is no thread-exit free after all. */
static __always_inline void settle_held(struct ht_call *c, __u32 proc)
{
	if (c && c->held_frees) {
		count_n(proc, HT_UNMATCHED_FREES, c->held_frees);
		c->held_frees = 0;
	}
}

/*
 * The stack of an unmatched free, as a site of its own (no allocations), so
 * that -f top can say where frees of blocks never seen allocated come from.
 * Walked from the caller, as if the free had returned: at the entry the
 * caller's frame pointer is not yet the free's, which would hide the caller.
 */
static __always_inline void unmatched_stack(__u32 proc, __u64 sp, __u64 fp, __u64 func_ip, __u32 spec)
{
	__u64 ra = 0;

	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)sp))
		return;
	unmatched_at(capture_walk(ra, sp + 8, fp, (__u64)proc << 32 | spec, func_ip), proc);
}

/*
 * An unmatched free by the program or the allocator: sp, fp and func_ip are
 * the stack and frame pointers and the function's address at its entry, c
 * the thread's state if it has one.  The allocator's own may be a
 * thread-exit free, held (and has no stack recorded).
 */
static __always_inline void unmatched_free(__u32 proc, __u64 sp, __u64 fp, __u64 func_ip, __u32 spec,
					   struct ht_call *c)
{
	if (from_allocator(sp, func_ip, spec)) {
		if (!c)
			c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (c) {
			c->held_frees++;
			return;
		}
	}
	settle_held(c, proc);
	count(proc, HT_UNMATCHED_FREES);
	unmatched_stack(proc, sp, fp, func_ip, spec);
}

/*
 * --sample-rate: does the thread's countdown cover an allocation of size
 * bytes?  If not, the allocation is sampled and the next countdown drawn
 * (bpf/sample.h says why this samples s bytes with probability
 * 1 - exp(-s/R)).  A countdown is per thread: no atomics, and the draws of
 * different threads are independent.
 */
static __always_inline bool sample(struct ht_call *c, __u64 size)
{
	if (!c->sampler_ready) {
		c->until_sample = ht_sample_interval(sample_rate, bpf_get_prandom_u32());
		c->sampler_ready = 1;
	}
	if (!ht_countdown(&c->until_sample, size))
		return false;
	c->until_sample = ht_sample_interval(sample_rate, bpf_get_prandom_u32());
	return true;
}

/*
 * What the return of an outermost allocator call (arguments in c->args)
 * will have to do.  With --sample-rate the size is known here, so an
 * unsampled call needs nothing at its return, unless it is a realloc of a
 * block that was sampled: that block is gone if the call succeeds.
 */
static __always_inline __u8 entry_decision(struct ht_call *c, __u32 proc, const volatile struct ht_alloc_spec *spec)
{
	if (!sample_rate)
		return HT_CALL_RECORD;
	if (spec->size_at_return)
		return HT_CALL_DECIDE;
	if (sample(c, request_size(spec, c->args, 0)))
		return HT_CALL_RECORD;

	__u64 old = spec->old_ptr_arg ? c->args[spec->old_ptr_arg & 7] : 0;
	return old && is_live(old, proc) ? HT_CALL_FREE_OLD : HT_CALL_SKIP;
}

/* The uretprobe trampoline of the current process, cached per thread (0: none mapped yet). */
static __always_inline __u64 uretprobe_trampoline(struct ht_call *c)
{
	if (!c->trampoline) {
		struct task_struct *task = bpf_get_current_task_btf();
		c->trampoline = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	}
	return c->trampoline;
}

/* An allocator's entry.  Returns whether its return probe is needed. */
static __always_inline bool alloc_entry(struct pt_regs *ctx, bool session)
{
	int proc = proc_slot();

	if (proc < 0)
		return false;

	struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c) {
		count(proc, HT_CALL_MAP_FULL);
		return false;
	}
	settle_held(c, proc);
	__u64 sp = PT_REGS_SP(ctx);
	__u32 spec = bpf_get_attach_cookie(ctx);
	if (c->depth) {
		/*
		 * An allocator entry point called from inside another: deeper
		 * (reallocarray calls realloc, an arena allocator calls malloc
		 * for a chunk) or at the same stack pointer when tail-called
		 * (glibc's realloc(NULL, n) jumps to malloc; both return probes
		 * then fire at the one return).  Only the outermost call is the
		 * program's request.  In a session the inner return is not
		 * needed at all.
		 */
		if (sp <= c->sp) {
			if (session)
				return false;
			c->depth++;
			return true;
		}
		count(proc, HT_MISSED_RETURNS);
	}
	if (in_stub_call(sp)) {
		/* Inside a call the stub made: that call is the request.  Its return, if it comes, only ends this one. */
		if (session)
			return false;
		c->sp = sp;
		c->spec = spec;
		c->depth = 1;
		c->state = HT_CALL_SKIP;
		return true;
	}
	save_args(ctx, c->args);
	/* The probe's address is a helper call: only for a spec that reads memory. */
	if (spec_of(spec)->n_mem)
		read_mems(spec_of(spec), c->args, multi_links ? bpf_get_func_ip(ctx) : PT_REGS_IP(ctx), proc);
	c->sp = sp;
	c->spec = spec;
	c->depth = 1;
	c->state = entry_decision(c, proc, spec_of(spec));
	/* Only a leaf's return can go: any other call's return tells which entries were nested in it. */
	if (session && c->state == HT_CALL_SKIP && spec_of(spec)->leaf) {
		c->depth = 0;
		return false;
	}
	return true;
}

/*
 * An allocator call has returned block ptr for a request of size bytes,
 * giving up old_ptr (a realloc's; 0: none): the old block's free, a
 * failure counted.  True if ptr is to be recorded (record: the call was
 * sampled), with the bytes a move copied in *copied.  l and tgid: the last
 * allocation of the thread that made the call, and its process; now: the
 * time of the call (0: the current time).
 */
static __always_inline bool alloc_outcome(__u32 proc, struct ht_last_alloc *l, __u32 tgid, __u64 now, __u64 ptr,
					  __u64 size, __u64 old_ptr, bool record, __u64 *copied)
{
	__u64 old_size = ~0ull;

	if (old_ptr) {
		/* realloc: the old block is gone when a new one came back, or when size 0 freed it. */
		if ((ptr || size == 0) && free_block_sized(old_ptr, proc, l, tgid, now, &old_size))
			count(proc, HT_UNMATCHED_FREES);
		if (!ptr) {
			if (size && record)
				count(proc, HT_FAILED_ALLOCS);
			return false;
		}
	}
	/* With --sample-rate, failed calls are counted among the sampled ones only. */
	if (!ptr) {
		if (record)
			count(proc, HT_FAILED_ALLOCS);
		return false;
	}
	/* A moved block's bytes were copied: as many as both blocks hold, when the old one's size is known. */
	*copied = old_ptr && ptr != old_ptr && old_size != ~0ull ? (old_size < size ? old_size : size) : 0;
	return record;
}

/*
 * An outermost allocator call has returned ret: the block it made (if
 * record) and the block a realloc gave up.  From a return probe, or from
 * the stub's record site with the registers of the call's entry (regs).
 */
static __always_inline void finish_alloc(struct pt_regs *ctx, struct pt_regs *regs, __u64 func_ip, __u32 proc,
					 __u32 spec_i, const __u64 *args, __u64 ret, bool record)
{
	const volatile struct ht_alloc_spec *spec = spec_of(spec_i);
	__u64 size = request_size(spec, args, ret);
	__u64 ptr = eval(&spec->ptr, args, ret);

	if (spec->out_ptr_arg) {
		/* posix_memalign returns an error number; the block comes back through *memptr. */
		if ((int)ret != 0 || bpf_probe_read_user(&ptr, sizeof(ptr), (void *)args[spec->out_ptr_arg & 7]))
			ptr = 0;
	}

	__u64 old_ptr = spec->old_ptr_arg ? args[spec->old_ptr_arg & 7] : 0;
	__u64 copied = 0;
	/* Only a realloc's free of its old block reads the thread's last allocation. */
	if (alloc_outcome(proc, old_ptr ? current_last_alloc(proc) : NULL, bpf_get_current_pid_tgid() >> 32, 0,
			  ptr, size, old_ptr, record, &copied))
		record_alloc(ctx, regs, func_ip, proc, spec_i, ptr, size, eval(&spec->objects, args, ret),
			     eval(&spec->arena, args, ret), old_ptr ? 1 : 0, copied);
}

/* An allocator's return: the outermost call's allocation is recorded, or not sampled. */
static __always_inline void alloc_exit(struct pt_regs *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return;

	struct ht_call *cur = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!cur || !cur->depth) {
		count(proc, HT_RETURNS_WITHOUT_ENTRY);
		return;
	}
	if (cur->depth > 1) {
		cur->depth--;
		return;
	}
	cur->depth = 0;
	if (cur->state == HT_CALL_SKIP)
		return;

	bool record = cur->state == HT_CALL_RECORD;
	if (cur->state == HT_CALL_DECIDE)
		record = sample(cur, request_size(spec_of(cur->spec), cur->args, PT_REGS_RC(ctx)));
	finish_alloc(ctx, ctx, multi_links ? bpf_get_func_ip(ctx) : 0, proc, cur->spec, cur->args, PT_REGS_RC(ctx),
		     record);
}

/*
 * A free of ptr entered at sp, inside a free_wraps function's free:
 * PyObject_Free(p) calls free(p) for a block of more than 512 bytes, and
 * a context allocator's pfree(p) calls free(p - 16), the chunk its
 * allocator malloc'd inside a traced call (so never recorded).  The outer
 * free accounted for its block; a block this one finds not live is the
 * wrapper's business, as a malloc nested in a traced allocator is: no
 * free of a block never seen.  Nested: below
 * the wrapper's stack pointer, or at it in another function (a tail jump),
 * while the wrapper's return address is still in its slot (or the
 * uretprobe trampoline, when another tracer's return probe took it).
 * Asked only of a block that is not live: a block
 * handed out again since the wrapper's free is live, and its free counts
 * even when a call from the wrapper's call site (an indirect one, say)
 * left the same return address in that slot.
 */
static __always_inline bool nested_in_free(struct ht_call *c, __u64 sp, __u32 spec)
{
	__u64 ra;

	if (!c || !c->free_ptr || sp > c->free_sp || (sp == c->free_sp && spec == c->free_spec))
		return false;
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)c->free_sp))
		return false;
	return ra == c->free_ra || ra == uretprobe_trampoline(c);
}

/*
 * A free's entry, from its uprobe or from the stub's record (sp and func_ip:
 * the stack pointer and the function's address at its entry; c: the
 * thread's call state, if any).
 */
static __always_inline void free_entry(__u32 proc, struct ht_call *c, __u64 sp, __u64 fp, __u64 func_ip,
				       __u32 spec_i, __u64 ptr)
{
	/* Inside an allocator call, a free is that call's business (realloc(p, 0) frees p). */
	if (c && c->depth && sp <= c->sp)
		return;

	bool live = free_live(ptr, proc, current_last_alloc(proc), 0);
	bool nested = !live && nested_in_free(c, sp, spec_i);

	if (spec_of(spec_i)->free_wraps) {
		if (!c)
			c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (c) {
			c->free_ptr = bpf_probe_read_user(&c->free_ra, sizeof(c->free_ra), (void *)sp) ? 0 : ptr;
			c->free_sp = sp;
			c->free_spec = spec_i;
		} else {
			count(proc, HT_CALL_MAP_FULL);
		}
	}
	if (!live && !nested && free_unknown(ptr, proc, bpf_get_current_pid_tgid() >> 32)) {
		unmatched_free(proc, sp, fp, func_ip, spec_i, c);
		return;
	}
	/* Any other free shows the thread was not exiting: what it held was unmatched. */
	settle_held(c, proc);
}

#endif /* HT_CALLS_BPF_H */
