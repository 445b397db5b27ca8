// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One program per event kind, shared by every allocator entry point:
 * alloc_enter (uprobe), alloc_return (uretprobe), free_enter and
 * reset_enter (uprobes).  alloc_session (alloc_session.bpf.c) is
 * alloc_enter and alloc_return in one uprobe session, for --sample-rate on
 * kernels that have them.  The attach cookie selects an ht_alloc_spec
 * saying where the request's arguments are.  Everything is aggregated
 * here, per stack; user space only reads the maps when it writes a profile.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "heaptrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * This file holds the programs; what they share is in headers by concern,
 * so that each can be read and changed on its own: config.bpf.h (settings,
 * which process), counters.bpf.h, request.bpf.h (a spec's arguments),
 * account.bpf.h (blocks and counters), calls.bpf.h (entry to return) and
 * sigframe.bpf.h (walking through signal frames); through them
 * live.bpf.h (the live blocks, in levels), stack.bpf.h (capture and
 * interning), unwind.bpf.h (the CFI walk) and scratch.bpf.h (the
 * capture's per-CPU buffer).
 */
#include "config.bpf.h"
#include "counters.bpf.h"
#include "request.bpf.h"
#include "account.bpf.h"
#include "calls.bpf.h"
#include "sigframe.bpf.h"
#include "maps.bpf.h"

SEC("uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	alloc_entry(ctx, false);
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	/*
	 * A link of one process has its pid in the cookie's high half
	 * (tracer_attach()).  Debian's 6.1 applies a perf event uprobe's
	 * process filter at the entry but not at the return (6.12 at both):
	 * every process's link on one function ran at every return, and a
	 * followed child's calls had one returns_without_entry each.
	 * uprobe_multi links (6.6 on) filter both and carry no pid.  The
	 * kernel's filter is by memory, not process: a vfork child (the
	 * parent's mm, whose owner the parent is) runs the parent's entry
	 * link too, so its return does as well.
	 */
	__u32 only = bpf_get_attach_cookie(ctx) >> 32;

	if (only && only != bpf_get_current_pid_tgid() >> 32 &&
	    (!bpf_core_field_exists(struct mm_struct, owner) ||
	     only != BPF_CORE_READ(bpf_get_current_task_btf(), mm, owner, tgid)))
		return 0;
	alloc_exit(ctx);
	return 0;
}

/* A free's arguments and memory reads: per CPU, since with the unmatched free's walk they overflow the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[HT_ARG_SLOTS]);
} free_args SEC(".maps");

SEC("uprobe")
int free_enter(struct pt_regs *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;

	__u64 *args = HT_HERE(free_args);
	if (!args)
		return 0;
	__u32 spec = bpf_get_attach_cookie(ctx);
	__u64 func_ip = multi_links ? bpf_get_func_ip(ctx) : PT_REGS_IP(ctx);
	save_args(ctx, args);
	read_mems(spec_of(spec), args, func_ip, proc);
	__u64 ptr = eval(&spec_of(spec)->ptr, args, 0);
	/* Inside an allocator call the stub made, a free is that call's business (free_entry()'s rule). */
	if (!ptr || in_stub_call(PT_REGS_SP(ctx)))
		return 0;
	free_entry(proc, bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0), PT_REGS_SP(ctx),
		   PT_REGS_FP(ctx), func_ip, spec, ptr);
	return 0;
}

/*
 * The in-process fast path (stub/): an allocator call or a free that the
 * stub decided to record, reported at its record site.  The record holds
 * the arguments, the result, and the stack and frame pointers at the
 * function's entry; the stack is walked from there, as from a return
 * probe.  The stub decided sampling and nesting already.
 */
/* The header and first frame of a stack the stub walked (struct ht_stub_stack), as stub_stack() reads them. */
struct stub_stack_head {
	__u32 depth, flags, fp_frames, pad;
	__u64 hash, pc0;
};

/* Per CPU, not on the stack: stub_alloc's frame is in its deepest call chain (512 bytes in all). */
struct stub_scratch {
	struct ht_stub_record rec;
	struct pt_regs regs;
	struct stub_stack_head head;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stub_scratch);
} stub_scratch SEC(".maps");

static __always_inline struct stub_scratch *stub_record(struct pt_regs *ctx, struct ht_call **call)
{
	struct stub_scratch *s = HT_HERE(stub_scratch);

	if (!s || bpf_probe_read_user(&s->rec, sizeof(s->rec), (void *)PT_REGS_PARM1(ctx)))
		return NULL;
	s->rec.spec &= HT_MAX_SPECS - 1;
	/*
	 * Made from inside a call traced by uprobes (an arena allocator
	 * mallocing its chunks, a --sym function): that call is the request.
	 * The stub tells nesting among its own functions itself.  A reset
	 * counts wherever it is called from, as reset_enter's uprobe does.
	 */
	struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (c && c->depth && s->rec.sp <= c->sp && spec_of(s->rec.spec)->kind != HT_SPEC_RESET)
		return NULL;
	*call = c;
	return s;
}

/*
 * The frames the stub walked (struct ht_stub_stack at addr), into the
 * scratch as the capture's walk would have left them: the capture only
 * stores them.  False when they cannot be read (the BPF walk runs).
 */
static __always_inline bool stub_stack(struct stub_scratch *s, __u64 addr, __u32 proc)
{
	struct scratch *sc = scratch_here();
	struct stub_stack_head *h = &s->head;

	/* The header and the first frame: the rest only if the stack is new (store_stack). */
	if (!sc || stack_mode == HT_STACK_KERNEL || bpf_probe_read_user(h, sizeof(*h), (void *)addr) || !h->depth ||
	    h->depth > HT_MAX_STACK_DEPTH)
		return false;
	sc->st.depth = h->depth;
	sc->st.flags = h->flags;
	sc->st.pcs[0] = h->pc0;
	sc->preset_hash = h->hash;
	sc->preset_addr = addr + __builtin_offsetof(struct ht_stub_stack, pcs);
	sc->preset = 1;
	count(proc, HT_STUB_WALKS);
	if (h->fp_frames)
		count_n(proc, HT_UNWIND_FP_FRAMES, h->fp_frames);
	return true;
}

/* A stack the stub walked is used once: a capture that did not happen (a failed call) must not leave it. */
static __always_inline void stub_stack_done(void)
{
	struct scratch *sc = scratch_here();

	if (sc) {
		sc->preset = 0;
		sc->preset_addr = 0;
	}
}

SEC("uprobe")
int stub_alloc(struct pt_regs *ctx)
{
	int proc = proc_slot();
	struct stub_scratch *s;
	struct ht_call *c;

	if (proc < 0 || !(s = stub_record(ctx, &c)))
		return 0;
	settle_held(c, proc);
	/* The caller's registers just after the call returned: its return address, above it, its frame. */
	if (bpf_probe_read_user(&s->regs.ip, sizeof(s->regs.ip), (void *)s->rec.sp))
		s->regs.ip = 0;
	s->regs.sp = s->rec.sp + 8;
	s->regs.bp = s->rec.fp;
	bool preset = s->rec.stack && stub_stack(s, s->rec.stack, proc);
	if (s->rec.flags & HT_STUB_UNWALKED)
		count(proc, HT_STUB_WALKS_HANDED);
	finish_alloc(ctx, &s->regs, s->rec.func_ip, proc, s->rec.spec, s->rec.args, s->rec.ret,
		     s->rec.flags & HT_STUB_SAMPLED);
	if (preset)
		stub_stack_done();
	return 0;
}


SEC("uprobe")
int reset_enter(struct pt_regs *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;

	__u64 args[HT_ARG_SLOTS];
	const volatile struct ht_alloc_spec *spec = spec_of(bpf_get_attach_cookie(ctx));
	save_args(ctx, args);
	read_mems(spec, args, multi_links ? bpf_get_func_ip(ctx) : PT_REGS_IP(ctx), proc);
	reset_arena(proc, eval(&spec->arena, args, 0));
	return 0;
}

/*
 * A free or an arena reset the stub recorded (both at its free site: the
 * descriptor's kind tells them apart), with the arguments and the reads of
 * memory of the entry in the record, as a probe would have saved them.
 */
SEC("uprobe")
int stub_free(struct pt_regs *ctx)
{
	int proc = proc_slot();
	struct stub_scratch *s;
	struct ht_call *c;

	if (proc < 0 || !(s = stub_record(ctx, &c)))
		return 0;
	const volatile struct ht_alloc_spec *spec = spec_of(s->rec.spec);
	/* At the entry still (the stub jumps to the function after this): every read of the spec, as free_enter's. */
	read_mems(spec, s->rec.args, s->rec.func_ip, proc);
	if (spec->kind == HT_SPEC_RESET) {
		reset_arena(proc, eval(&spec->arena, s->rec.args, 0));
		return 0;
	}
	__u64 ptr = eval(&spec->ptr, s->rec.args, 0);
	if (ptr)
		free_entry(proc, c, s->rec.sp, s->rec.fp, s->rec.func_ip, s->rec.spec, ptr);
	return 0;
}

struct exec_ctx {
	__u64 dropped;
	__u32 proc;
};

static long drop_block(struct bpf_map *map, __u64 *key, struct ht_block *b, struct exec_ctx *x)
{
	struct ht_block copy = *b;

	if (ht_live_key_proc(*key) != x->proc || live_delete_in(map, key))
		return 0;
	if (release(&copy, *key, x->proc))
		x->dropped++;
	if (copy.flags & HT_BLOCK_ARENA)
		bpf_map_delete_elem(&arena_blocks, key);
	return 0;
}

/* --mmap: the old image's mappings went with it (their blocks with the levels' below). */
static long drop_range(struct bpf_map *map, __u64 *key, __u64 *end, struct exec_ctx *x)
{
	if (ht_live_key_proc(*key) == x->proc)
		bpf_map_delete_elem(map, key);
	return 0;
}

/* One level's blocks of the process (bpf_loop: the verifier checks it once, not once per level). */
static long drop_level(__u32 level, struct exec_ctx *x)
{
	void *m = live_level(level);

	if (m)
		bpf_for_each_map_elem(m, drop_block, x, 0);
	return 0;
}

/*
 * execve() replaces the heap: every block of the old program is gone
 * without a free.  Release them all, so the new program starts from zero
 * in use (its allocations are traced if it uses the same allocator object).
 */
SEC("raw_tp/sched_process_exec")
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
		c->trampoline = 0;
		c->free_ptr = 0;
		settle_held(c, proc);
	}
	forget_restorer();
	bpf_for_each_map_elem(&map_ranges, drop_range, &x, 0);
	/* The stub went with the old image (a new one is told afresh). */
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	bpf_map_delete_elem(&stub_procs, &tgid);
	bpf_loop(HT_LIVE_LEVELS, drop_level, &x, 0);
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
 * Without --follow-fork: the target forked a child, which runs untraced.
 * Counted (in the target's slot) so that heaptrace can say so at the end;
 * a new thread (same thread group) is no child.  The fork runs in the
 * parent, so the current task's thread group is the parent's.
 */
/*
 * A program a followed child executed, at its loader's _dl_debug_state
 * (the link is for that process alone): a signal heaptrace's ptrace loop
 * stops it at, to install its stub once the allocator is mapped.  No
 * breakpoint written: were heaptrace SIGKILLed, the link goes with it and
 * a signal already sent is ignored.
 */
SEC("uprobe")
int loader_state(struct pt_regs *ctx)
{
	bpf_send_signal_thread(HT_LOADER_SIGNAL);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int process_fork(__u64 *ctx)
{
	struct task_struct *child = (struct task_struct *)ctx[1];

	if (follow_fork || tracing_stopped || bpf_get_current_pid_tgid() >> 32 != target_tgid)
		return 0;
	if (BPF_CORE_READ(child, pid) == BPF_CORE_READ(child, tgid))
		count(0, HT_UNTRACED_CHILDREN);
	return 0;
}

/*
 * A thread of a traced process exits: the unmatched frees it held
 * (free_entry()) were the allocator emptying its cache, if it is a worker
 * thread; the main thread's are unmatched_frees.
 */
SEC("raw_tp/sched_process_exit")
int thread_exit(void *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;
	struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!c || !c->held_frees)
		return 0;
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)id == id >> 32) {
		settle_held(c, proc);
		return 0;
	}
	count_n(proc, HT_THREAD_EXIT_FREES, c->held_frees);
	c->held_frees = 0;
	return 0;
}

/*
 * A signal about to run a handler on a traced thread: the handler's
 * restorer is where a stack walk meets the kernel's signal frame
 * (sigframe.bpf.h).  Every delivery in the system passes here; an
 * untraced process costs one comparison, or one lookup with --follow-fork.
 * A raw tracepoint, not tp_btf: a BTF-typed one makes libbpf read the
 * kernel's whole BTF to find its target (~60 ms of every start), where
 * ka's fields are read by CO-RE through the cut-down kernel types
 * (user/tracer/ktypes.c) like any other kernel read.
 */
SEC("raw_tp/signal_deliver")
int BPF_PROG(signal_deliver, int sig, struct kernel_siginfo *info, struct k_sigaction *ka)
{
	if (proc_slot() >= 0)
		note_restorer(ka);
	return 0;
}

/* oom:mark_victim's record, as its format file gives it (a tracepoint's fields are its ABI). */
struct oom_victim_args {
	__u64 common;
	int pid;
};

/*
 * The OOM killer chose a process: if it is traced, its oom_kills counter
 * says so (the session tells at the end, and every output carries it).
 * The victim is looked up by the record's pid, not the current task: the
 * task that ran out of memory is often another one.
 */
SEC("tracepoint/oom/mark_victim")
int oom_victim(struct oom_victim_args *ctx)
{
	__u32 tgid = ctx->pid;
	int proc = -1;

	if (tracing_stopped)
		return 0;
	if (tgid == target_tgid) {
		proc = 0;
	} else if (follow_fork) {
		struct ht_proc *p = bpf_map_lookup_elem(&procs, &tgid);
		if (p)
			proc = (int)(p->slot & (HT_MAX_PROCS - 1));
	}
	if (proc >= 0)
		count_n(proc, HT_OOM_KILLS, 1);
	return 0;
}

/* The syscalls tracepoints' records, as their format files give them (their ABI). */
struct sys_enter_args {
	__u64 common;
	int nr;
	int pad;
	__u64 args[6];
};

struct sys_exit_args {
	__u64 common;
	int nr;
	int pad;
	long ret;
};

/*
 * --mmap (maps.bpf.h): syscalls:sys_enter_brk, to know the break a brk()
 * starts from; the other calls need nothing from their entry.
 */
SEC("tracepoint")
int map_enter(struct sys_enter_args *ctx)
{
	if (proc_slot() >= 0 && ctx->nr == NR_BRK)
		map_enter_brk();
	return 0;
}

/* --mmap: syscalls:sys_exit_{mmap,munmap,mremap,brk}, one program; the record's number says which. */
SEC("tracepoint")
int map_exit(struct sys_exit_args *ctx)
{
	int proc = proc_slot();

	if (proc >= 0)
		map_exit_call(proc, ctx->nr, ctx->ret);
	return 0;
}
