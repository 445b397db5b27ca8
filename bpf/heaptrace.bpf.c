// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Three programs, one per event kind, shared by every allocator entry point:
 * alloc_enter (uprobe), alloc_return (uretprobe) and free_enter (uprobe).
 * The attach cookie selects an ht_alloc_spec saying where the request's
 * arguments are.  Everything is aggregated here, per stack; user space only
 * reads the maps when it writes a profile.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "heaptrace.h"

#define EEXIST 17

/* libbpf 1.1 stops at the fifth argument register. */
#if !defined(PT_REGS_PARM6) && defined(__TARGET_ARCH_x86)
#define PT_REGS_PARM6(x) (((const struct pt_regs *)(x))->r9)
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_tgid = 0;
const volatile __u64 page_size = 4096;
const volatile struct ht_alloc_spec specs[HT_MAX_SPECS] = {};

/* Sizes are set by the loader before load (--max-allocs, --max-stacks). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_THREADS);
	__type(key, __u64);             /* pid_tgid */
	__type(value, struct ht_call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_DEFAULT_MAX_LIVE);
	__type(key, __u64);             /* block address */
	__type(value, struct ht_block);
} live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, HT_MAX_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS + 1);
	__type(key, struct ht_site_key);
	__type(value, struct ht_site);
} sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HT_COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &which);

	if (v)
		(*v)++;
}

/*
 * Argument n (1-based).  Loaded into an array first: a switch over ctx fields
 * gets folded into a variable ctx offset, which the verifier refuses.
 */
static __always_inline __u64 arg(struct pt_regs *ctx, __u32 n)
{
	__u64 a[8] = { 0, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
		       PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), PT_REGS_PARM6(ctx), 0 };

	return a[n & 7];
}

static __always_inline bool traced(__u64 pid_tgid)
{
	return (pid_tgid >> 32) == target_tgid;
}

static __always_inline const volatile struct ht_alloc_spec *spec_of(__u32 i)
{
	return &specs[i & (HT_MAX_SPECS - 1)];
}

static __always_inline struct ht_site *site_of(__u32 stack_id)
{
	struct ht_site_key key = { .stack_id = stack_id };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &key);

	if (s)
		return s;
	/* Two CPUs may race to create it: NOEXIST lets one win, both then share it. */
	struct ht_site zero = {};
	bpf_map_update_elem(&sites, &key, &zero, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&sites, &key);
	if (!s)
		count(HT_LOSS_SITE_FULL);
	return s;
}

static __always_inline void release(struct ht_block *b)
{
	struct ht_site_key key = { .stack_id = b->stack_id };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &key);

	if (s) {
		__sync_fetch_and_add(&s->inuse_objects, -1);
		__sync_fetch_and_add(&s->inuse_bytes, -(__s64)b->size);
	}
}

static __always_inline void free_block(__u64 ptr)
{
	struct ht_block *live_b = bpf_map_lookup_elem(&live, &ptr);

	if (!live_b) {
		count(HT_UNMATCHED_FREES);
		return;
	}
	struct ht_block b = *live_b;
	/* Only the deleter accounts the free, so a racing double free counts once. */
	if (bpf_map_delete_elem(&live, &ptr))
		return;
	release(&b);
	count(HT_FREES);
}

static __always_inline void record_alloc(struct pt_regs *ctx, __u64 ptr, __u64 size)
{
	long sid = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	struct ht_block b = { .size = size, .time_ns = bpf_ktime_get_ns() };

	if (sid < 0) {
		count(sid == -EEXIST ? HT_LOSS_STACK_COLLISION : HT_LOSS_STACK_ERROR);
		b.stack_id = HT_STACK_LOST;
	} else {
		b.stack_id = sid;
	}

	struct ht_site *s = site_of(b.stack_id);
	if (!s)
		return;
	__sync_fetch_and_add(&s->alloc_objects, 1);
	__sync_fetch_and_add(&s->alloc_bytes, size);
	count(HT_ALLOCS);

	if (bpf_map_update_elem(&live, &ptr, &b, BPF_NOEXIST)) {
		struct ht_block *old = bpf_map_lookup_elem(&live, &ptr);

		if (!old) {
			count(HT_LOSS_LIVE_FULL);
			return;
		}
		/* The allocator handed this address out again: its free went unseen. */
		struct ht_block stale = *old;
		count(HT_REUSED_BLOCKS);
		release(&stale);
		if (bpf_map_update_elem(&live, &ptr, &b, BPF_EXIST)) {
			count(HT_LOSS_LIVE_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&s->inuse_objects, 1);
	__sync_fetch_and_add(&s->inuse_bytes, size);
}

SEC("uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (!traced(id))
		return 0;

	__u64 sp = PT_REGS_SP(ctx);
	struct ht_call *cur = bpf_map_lookup_elem(&calls, &id);
	if (cur) {
		/*
		 * An allocator entry point called from inside another: deeper
		 * (reallocarray calls realloc) or at the same stack pointer when
		 * tail-called (glibc's realloc(NULL, n) jumps to malloc; both
		 * return probes then fire at the one return).  Only the outermost
		 * call is the program's request.  Entries of threads that died
		 * mid-call are removed at their exit, so the thread id cannot
		 * inherit one.
		 */
		if (sp <= cur->sp) {
			cur->depth++;
			return 0;
		}
		count(HT_LOSS_STALE_ENTRY);
	}

	__u32 si = bpf_get_attach_cookie(ctx);
	const volatile struct ht_alloc_spec *spec = spec_of(si);
	struct ht_call c = { .sp = sp, .spec = si, .depth = 1 };

	c.size = arg(ctx, spec->size_arg);
	if (spec->size_mul_arg)
		c.size *= arg(ctx, spec->size_mul_arg);
	if (spec->page_round)
		c.size = (c.size + page_size - 1) & ~(page_size - 1);
	if (spec->old_ptr_arg)
		c.old_ptr = arg(ctx, spec->old_ptr_arg);
	if (spec->out_ptr_arg)
		c.out_ptr = arg(ctx, spec->out_ptr_arg);

	if (bpf_map_update_elem(&calls, &id, &c, BPF_ANY))
		count(HT_LOSS_CALLS_FULL);
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (!traced(id))
		return 0;

	struct ht_call *cur = bpf_map_lookup_elem(&calls, &id);
	if (!cur) {
		count(HT_LOSS_NO_ENTRY);
		return 0;
	}
	if (cur->depth > 1) {
		cur->depth--;
		return 0;
	}
	struct ht_call c = *cur;
	bpf_map_delete_elem(&calls, &id);

	const volatile struct ht_alloc_spec *spec = spec_of(c.spec);
	__u64 ptr = PT_REGS_RC(ctx);

	if (spec->out_ptr_arg) {
		/* posix_memalign returns an error number; the block comes back through *memptr. */
		if ((int)ptr != 0 || bpf_probe_read_user(&ptr, sizeof(ptr), (void *)c.out_ptr))
			ptr = 0;
	}

	if (c.old_ptr) {
		/* realloc: the old block is gone when a new one came back, or when size 0 freed it. */
		if (ptr || c.size == 0)
			free_block(c.old_ptr);
		if (!ptr) {
			if (c.size)
				count(HT_FAILED_ALLOCS);
			return 0;
		}
	}
	if (!ptr) {
		count(HT_FAILED_ALLOCS);
		return 0;
	}
	record_alloc(ctx, ptr, c.size);
	return 0;
}

SEC("uprobe")
int free_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (!traced(id))
		return 0;

	const volatile struct ht_alloc_spec *spec = spec_of(bpf_get_attach_cookie(ctx));
	__u64 ptr = arg(ctx, spec->old_ptr_arg);
	if (!ptr)
		return 0;

	/* A free inside realloc(p, 0) is accounted by realloc's return. */
	struct ht_call *cur = bpf_map_lookup_elem(&calls, &id);
	if (cur && PT_REGS_SP(ctx) <= cur->sp)
		return 0;

	free_block(ptr);
	return 0;
}

/* A thread that exits inside an allocator call never returns from it. */
SEC("tracepoint/sched/sched_process_exit")
int thread_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (traced(id) && !bpf_map_delete_elem(&calls, &id))
		count(HT_LOSS_STALE_ENTRY);
	return 0;
}
