// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The consumer of a process's event ring (exact mode's batching,
 * docs/fast-path.md; the layout in heaptrace.h, "The event ring"): one
 * program that heaptrace runs by BPF_PROG_TEST_RUN
 * (user/tracer/drain.c) with a struct ht_drain_ctx.  It reads the slots
 * from heaptrace's own mapping of the ring and accounts each event with
 * the record sites' functions (account.bpf.h, calls.bpf.h, stack.bpf.h),
 * into the same maps: so every output sees the same numbers whichever
 * path recorded an event.
 *
 * An object of its own, with heaptrace.bpf.c's maps and globals (shared
 * by fd, as alloc_session.bpf.c's) and maps of its own: its load is off
 * heaptrace's start-up (drain.c loads it in the drain thread; the ring
 * holds events until then), and only a run with a ring pays for it.
 *
 * A raw tracepoint's program, never attached: of the program types
 * BPF_PROG_TEST_RUN runs with a context, the one with a private stack
 * (account_alloc() and the live map's functions below it take most of the
 * 512 bytes a syscall program has for all its frames).  So not sleepable:
 * the slots are read with bpf_probe_read_user, which does not fault pages
 * in (drain.c's scan of the published slots has just faulted them in), and
 * no kfunc finds a thread's task: a drained thread's state is kept by tid.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "heaptrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The same headers as alloc_session.bpf.c, in its order: the globals sit where the main object has them. */
#include "config.bpf.h"
#include "counters.bpf.h"
#include "request.bpf.h"
/* A run's changes to the sites go to them at its end (site_deltas.bpf.h). */
#define HT_SITE_DELTAS
#include "account.bpf.h"
#include "calls.bpf.h"

/*
 * What each stack a process sent (HT_EV_STACK) came with, for its
 * allocations: the record sites count a stack's flags and losses at every
 * allocation (store_stack()), and a ring's allocation carries only the
 * hash.  This object's own map (the main object has none like it); sized
 * by drain.c (--max-stacks).
 */
struct ring_stack_key {
	__u64 hash;
	__u32 proc;
	__u32 pad;
};

struct ring_stack {
	__u32 flags;            /* HT_STACK_TRUNCATED, HT_STACK_MAX_DEPTH */
	__u32 fp_frames;        /* frames unwound by frame pointer (unwind_fp_frames) */
	__u32 loss;             /* the counter of the loss that made it HT_STACK_LOST (a collision, the map full), 0: none */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS);
	__type(key, struct ring_stack_key);
	__type(value, struct ring_stack);
} ring_stacks SEC(".maps");

struct drain {
	__u64 ring;             /* the slots, in heaptrace */
	__u64 pos, end;         /* the next position; the first not to consume */
	__u64 ahead, n_ahead;   /* drain_buf holds the slots from position ahead, n_ahead of them */
	__u64 events;           /* allocations, frees and resets accounted */
	__u64 now;              /* the event's time (ring_time()) */
	__u64 pass_ns;          /* the pass's time: an event's that the stub did not stamp */
	__u64 clock_ns, clock_ticks, tick_mult;        /* struct ht_drain_ctx's */
	__u64 stop_bytes;       /* struct ht_drain_ctx's: stop before an allocation once alloc_bytes reach it */
	__u64 seen_hash;        /* the last stack looked up in ring_stacks (0: none), and what it held: */
	struct ring_stack seen; /* a program's allocations come in runs of one stack */
	__u32 tgid, proc;
	__u32 lane;             /* struct ht_drain_ctx's */
	bool old_image;         /* the ring's process executed a new program since the ring was made */
	bool discard;           /* the process is not traced (any more): consume, account nothing */
	bool at_volume;         /* stopped before an allocation at stop_bytes */
};

/*
 * A pass's state and the slots it read ahead, per CPU: one read of up to
 * DRAIN_AHEAD slots costs little more than one of a slot (drain.c has
 * seen them all published, and its scan faulted their pages in).  Off the
 * BPF stack, which the accounting's calls below the loop fill: where the
 * kernel gives BPF no private stack, the deepest chain (drain >
 * drain_step > ring_alloc > free_taken > ...) has 512 bytes in all, and
 * the state on drain's stack took 120 of them.  A raw
 * tracepoint's test run holds its CPU (get_cpu()): no other pass, and no
 * probe, runs on it meanwhile.  bpf_loop's context must be on the stack,
 * so drain_step is given none and finds the state here.
 */
#define DRAIN_AHEAD 64

struct drain_buf {
	struct drain d;
	struct ht_ev ev[DRAIN_AHEAD];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct drain_buf);
} drain_buf SEC(".maps");

static __always_inline void *slot_at(const struct drain *d, __u64 pos)
{
	return (void *)(d->ring + (pos & (HT_RING_SLOTS - 1)) * sizeof(struct ht_ev));
}

/*
 * The blocks of paired allocations (HT_EV_PAIRED: user/tracer/pair.c
 * found the free that ends each later in the same run), by the
 * allocation's slot, kept for that free: such a block never enters the
 * live map.  One run at a time (drain.c's lock); a lane a ring
 * (HT_DRAIN_LANES: what a run held back waits for the ring's next run
 * there, whatever other rings run between); pos says whose an entry is
 * (~0: none).
 */
struct pair_block {
	struct ht_block b;
	__u64 ptr;
	__u64 pos;              /* the allocation's position */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_RING_SLOTS * HT_DRAIN_LANES);
	__type(key, __u32);
	__type(value, struct pair_block);
} pair_blocks SEC(".maps");

static __always_inline struct pair_block *pair_at(__u64 pos, __u32 lane)
{
	__u32 i = (lane & (HT_DRAIN_LANES - 1)) * HT_RING_SLOTS + (pos & (HT_RING_SLOTS - 1));

	return bpf_map_lookup_elem(&pair_blocks, &i);
}

static __always_inline void add_held(__s64 n)
{
	add_ring_held(0, n);
}

/* An entry whose tid is now another process's thread: it is gone, and what it held was its exit's. */
static __always_inline void thread_gone(struct ht_ring_thread *t)
{
	if (t->held_frees) {
		count_n(t->proc & (HT_MAX_PROCS - 1), HT_THREAD_EXIT_FREES, t->held_frees);
		add_held(-(__s64)t->held_frees);
	}
}

static __always_inline void thread_init(struct ht_ring_thread *t, const struct drain *d, __u32 tid)
{
	*t = (struct ht_ring_thread){ .tgid = d->tgid, .proc = d->proc, .tid = tid };
}

/*
 * Thread tid's entry (create: made if it has none): its slot of
 * ring_threads when it holds it, the one lookup of almost every event;
 * else in ring_threads_over (a thread met while another held its slot
 * stays there: one entry a thread).
 */
static __always_inline struct ht_ring_thread *thread_of(const struct drain *d, __u32 tid, bool create)
{
	struct ht_ring_thread *slot = ring_thread_slot(tid), *t;

	if (slot && slot->tid == tid) {
		if (slot->tgid == d->tgid)
			return slot;
		thread_gone(slot);
		if (!create) {
			slot->tid = 0;
			return NULL;
		}
		thread_init(slot, d, tid);
		return slot;
	}
	t = bpf_map_lookup_elem(&ring_threads_over, &tid);
	if (t && t->tgid != d->tgid) {
		thread_gone(t);
		bpf_map_delete_elem(&ring_threads_over, &tid);
		t = NULL;
	}
	if (t || !create)
		return t;
	/* Its slot when empty; else the slot is another thread's (alive, or gone and not yet emptied by drain.c). */
	return ring_thread_make(tid, d->tgid, d->proc);
}

/* What the thread held is no thread-exit free after all (settle_held()'s rule). */
static __always_inline void settle_thread(struct ht_ring_thread *t, __u32 proc)
{
	if (t && t->held_frees) {
		count_n(proc, HT_UNMATCHED_FREES, t->held_frees);
		add_held(-(__s64)t->held_frees);
		t->held_frees = 0;
	}
}

/*
 * A stack and its HT_RING_STACK_SLOTS(depth) slots of frames, all
 * published (drain.c counts only whole runs of published slots, and
 * drain_step checks it again): into the stacks map as the BPF walk's
 * would go (intern_stack(): the same hash, collisions found the same
 * way), and what came with it into ring_stacks.
 */
__noinline int take_stack(struct drain *d, const struct ht_ev *ev, __u32 n)
{
	struct scratch *sc = scratch_here();
	struct ht_ev_pcs c;

	if (!sc || !d || !ev)
		return 0;
	struct ring_stack_key key = { .hash = ev->hash, .proc = d->proc };
	struct ring_stack rs = { .flags = ev->flags, .fp_frames = ev->fp_frames };
	for (__u32 k = 0; k < HT_RING_STACK_SLOTS(HT_MAX_STACK_DEPTH); k++) {
		if (k >= n)
			break;
		__u64 pos = d->pos + 1 + k;
		if (bpf_probe_read_user(&c, sizeof(c), slot_at(d, pos)) || c.seq != pos + 1)
			return 0;
		for (__u32 j = 0; j < HT_RING_PCS; j++) {
			__u32 i = k * HT_RING_PCS + j;
			if (i < HT_MAX_STACK_DEPTH)
				sc->st.pcs[i] = c.pcs[j];
		}
	}
	if (d->discard)
		return 1;
	sc->st.depth = ev->depth;
	sc->st.flags = ev->flags;
	/* Frames that are not the ones hashed would be another stack's under this hash: a loss, not a guess. */
	if (!ev->depth || ev->depth > HT_MAX_STACK_DEPTH || !ev->hash || hash_stack(&sc->st) != ev->hash)
		rs.loss = HT_STACK_ERRORS;
	else
		intern_stack(sc, ev->hash, 0, &rs.loss);
	/* Not kept (ring_stacks full): each allocation of the stack counts it, as the record sites count a lost stack. */
	bpf_map_update_elem(&ring_stacks, &key, &rs, BPF_ANY);
	if (d->seen_hash == ev->hash)
		d->seen_hash = 0;       /* sent again: what ring_stacks holds now */
	return 1;
}

/*
 * An allocation's stack, counted as stub_stack() and store_stack() count
 * an allocation's at the record sites: the walk and its frame-pointer
 * frames for every call, the flags and the losses for a recorded one.
 * Its hash, or HT_STACK_LOST.  !alloc: an unmatched free's, which the
 * record sites walk in BPF (no stub_walks).
 */
static __always_inline __u64 ring_stack_of(struct drain *d, __u64 hash, bool record, bool alloc)
{
	struct ring_stack_key key = { .hash = hash, .proc = d->proc };
	struct ring_stack rs;

	if (!hash || hash != d->seen_hash) {
		struct ring_stack *found = hash ? bpf_map_lookup_elem(&ring_stacks, &key) : NULL;
		if (!found) {
			/* Never sent, or not kept (ring_stacks full): a lost stack, counted per allocation. */
			if (record)
				count(d->proc, HT_STACK_ERRORS);
			return HT_STACK_LOST;
		}
		d->seen_hash = hash;
		d->seen = *found;
	}
	rs = d->seen;
	if (alloc)
		count(d->proc, HT_STUB_WALKS);
	if (rs.fp_frames)
		count_n(d->proc, HT_UNWIND_FP_FRAMES, rs.fp_frames);
	if (!record)
		return HT_STACK_LOST;
	if (rs.flags & HT_STACK_TRUNCATED)
		count(d->proc, HT_STACKS_TRUNCATED);
	if (rs.flags & HT_STACK_MAX_DEPTH)
		count(d->proc, HT_STACKS_AT_MAX_DEPTH);
	if (rs.loss) {
		count(d->proc, rs.loss);
		return HT_STACK_LOST;
	}
	return hash;
}

/*
 * An allocator call returned (stub_alloc()'s and finish_alloc()'s work, on
 * the values the stub evaluated): 1 if its block is to be accounted, its
 * record in alloc_rec_here() (ring_account()).  A global function, as the
 * other kinds': the verifier checks each once, not once for every path of
 * the loop's step.  It does not call account_alloc() itself: below its
 * frame, account_alloc()'s chain took the drain over the 512 bytes of
 * stack a program has in all where BPF has no private stack.
 */
__noinline int ring_alloc(struct drain *d, const struct ht_ev *ev)
{
	if (!d || !ev)
		return 0;

	bool record = ev->flags & HT_STUB_SAMPLED;
	__u32 proc = d->proc;

	/* A signal handler's event over its own thread's producer, its walk failed: stack 0, lost (stack_errors). */
	if (ev->flags & HT_STUB_UNWALKED)
		count(proc, HT_STUB_WALKS_HANDED);
	if (d->old_image) {
		/* Allocated by the program the exec replaced: its blocks went with it (process_exec()). */
		if (ev->ptr && record) {
			count(proc, HT_ALLOCS);
			count(proc, HT_EXEC_DROPPED);
			struct ht_totals *t = bpf_map_lookup_elem(&totals, &proc);
			if (t)
				__sync_fetch_and_add(&t->exec_dropped, 1);
		}
		return 0;
	}
	struct ht_ring_thread *th = thread_of(d, ev->tid, true);
	__u64 copied = 0, stack = ring_stack_of(d, ev->stack, record && ev->ptr, true);
	/* Freed later in this run: the block waits for its free in pair_blocks, not in the live map. */
	struct pair_block *pb = (ev->flags & HT_EV_PAIRED) && !ev->arena ? pair_at(d->pos, d->lane) : NULL;

	if (pb)
		pb->pos = ~0ull;
	settle_thread(th, proc);
	if (alloc_outcome(proc, th ? &th->last : NULL, d->tgid, d->now, ev->ptr, ev->size, ev->old, record, &copied)) {
		struct alloc_rec *r = alloc_rec_here();
		set_last_alloc(th ? &th->last : NULL, stack, ev->size);
		if (!r)
			return 0;
		*r = (struct alloc_rec){ .stack = stack, .ptr = ev->ptr, .size = ev->size, .objects = ev->objects,
					 .arena = ev->arena, .reallocs = ev->old ? 1 : 0, .realloc_bytes = copied,
					 .now = d->now, .proc = proc, .flags = pb ? ALLOC_PAIRED : 0 };
		return 1;
	}
	return 0;
}

/* ring_alloc()'s block into the live map and the counters (a paired one: into pair_blocks, for its free). */
static __always_inline void ring_account(const struct drain *d, const struct ht_ev *ev)
{
	struct alloc_rec *r = alloc_rec_here();
	struct pair_block *pb = r && (r->flags & ALLOC_PAIRED) ? pair_at(d->pos, d->lane) : NULL;

	if (r && account_alloc(r) && pb) {
		pb->b = alloc_block(r);
		pb->ptr = ev->ptr;
		pb->pos = d->pos;
	}
}

/*
 * A free (free_entry()'s work where the stub has decided nesting): an
 * unmatched one by the allocator's own code is held as a possible
 * thread-exit free, as unmatched_free() holds it.  Its stack is not known
 * here (-f top's site of unmatched frees): the stub walks allocations only.
 */
__noinline int ring_free(struct drain *d, const struct ht_ev *ev)
{
	if (!d || !ev)
		return 0;

	__u32 proc = d->proc;

	/* A block of the replaced program: gone at the exec already. */
	if (d->old_image || !ev->ptr)
		return 0;
	struct ht_ring_thread *th = thread_of(d, ev->tid, false);
	/* The free of a paired allocation (its position in old): its block, kept by the allocation. */
	struct pair_block *pb = ev->flags & HT_EV_PAIRED ? pair_at(ev->old, d->lane) : NULL;

	if (pb && pb->pos == ev->old && pb->ptr == ev->ptr) {
		struct ht_block b = pb->b;
		pb->pos = ~0ull;
		free_taken(&b, ht_live_key(ev->ptr, proc), proc, th ? &th->last : NULL, d->now);
		settle_thread(th, proc);
		return 0;
	}
	/* Else its allocation was not accounted (a map full): not live, as it would not be in the live map. */
	if (!free_live(ev->ptr, proc, th ? &th->last : NULL, d->now) && free_unknown(ev->ptr, proc, d->tgid)) {
		if (thread_exits_seen && (ev->flags & HT_EV_FREE_IN_ALLOCATOR)) {
			if (!th)
				th = thread_of(d, ev->tid, true);
			if (th) {
				th->held_frees++;
				add_held(1);
				return 0;
			}
		}
		settle_thread(th, proc);
		count(proc, HT_UNMATCHED_FREES);
		/* A wrapping free's stack (STUB_FN_WRAPS), as the record sites' unmatched_stack() charges one. */
		if (ev->stack)
			unmatched_at(ring_stack_of(d, ev->stack, true, false), proc);
		return 0;
	}
	/* Any other free shows the thread was not exiting: what it held was unmatched. */
	settle_thread(th, proc);
	return 0;
}

/*
 * An arena reset.  A function of its own: its bpf_loop, inlined by the
 * verifier, takes 24 bytes of its caller's frame, and drain_step's is in
 * the drain's deepest call chain.
 */
__noinline int ring_reset(__u32 proc, __u64 arena)
{
	/* The reset changes its sites themselves, in the epoch of the changes before it. */
	site_deltas_flush();
	reset_arena(proc, arena);
	return 0;
}

/*
 * When the stub made the call (heaptrace_ring.h's HT_EV_TICKS): ticks
 * before the pass's reference point, at the rate heaptrace measured.  One
 * beyond the reference by more than a second, or more than half a lap
 * before it, cannot be placed: the pass's time.
 */
static __always_inline __u64 ring_time(const struct drain *d, const struct ht_ev *ev)
{
	if (!ev->ticks || !d->tick_mult)
		return d->pass_ns;
	__s32 back = (__s32)((__u32)d->clock_ticks - ev->ticks);
	__u64 ns = (__u64)(back < 0 ? -(__s64)back : back) * d->tick_mult >> HT_TICK_MULT_SHIFT;
	if (back >= 0)
		return ns < d->clock_ns ? d->clock_ns - ns : d->pass_ns;
	return ns < 1000000000ull ? d->clock_ns + ns : d->pass_ns;
}

/* --interval-bytes' multiple reached (struct ht_drain_ctx's stop_bytes): the key is in the map value, off the stack. */
static __always_inline bool volume_reached(struct drain *d)
{
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &d->proc);

	return t && t->alloc_bytes >= d->stop_bytes;
}

/*
 * One event at d->pos; 1 to stop: the slot is not published (or not
 * readable), a stack's frames are not all within this pass, or an
 * allocation would pass --interval-bytes' multiple before its snapshot.
 */
static long drain_step(__u32 i, void *unused)
{
	struct drain_buf *b = HT_HERE(drain_buf);
	struct drain *d = b ? &b->d : NULL;

	if (!d || d->pos >= d->end)
		return 1;
	if (d->pos - d->ahead >= d->n_ahead) {
		/* The next slots, as many as this pass consumes at most, up to the ring's end. */
		__u64 n = d->end - d->pos, to_wrap = HT_RING_SLOTS - (d->pos & (HT_RING_SLOTS - 1));
		if (n > to_wrap)
			n = to_wrap;
		if (n > DRAIN_AHEAD)
			n = DRAIN_AHEAD;
		if (!n || bpf_probe_read_user(b->ev, n * sizeof(struct ht_ev), slot_at(d, d->pos)))
			return 1;
		d->ahead = d->pos;
		d->n_ahead = n;
	}
	struct ht_ev *ev = &b->ev[(d->pos - d->ahead) & (DRAIN_AHEAD - 1)];
	if (ev->seq != d->pos + 1)
		return 1;
	if (ev->kind != HT_EV_STACK)
		d->now = ring_time(d, ev);
	switch (ev->kind) {
	case HT_EV_STACK: {
		__u32 n = HT_RING_STACK_SLOTS(ev->depth);
		if (d->pos + 1 + n > d->end)
			return 1;
		if (ev->depth > HT_MAX_STACK_DEPTH) {
			/* Deeper than any walk: passed over, not waited on (its allocations find no stack: stack_errors). */
			if (!d->discard)
				count(d->proc, HT_STACK_ERRORS);
		} else if (!take_stack(d, ev, n)) {
			return 1;
		}
		d->pos += n;
		break;
	}
	case HT_EV_ALLOC:
		if (d->stop_bytes && volume_reached(d)) {
			d->at_volume = true;
			return 1;
		}
		if (!d->discard && ring_alloc(d, ev))
			ring_account(d, ev);
		d->events++;
		break;
	case HT_EV_FREE:
		if (!d->discard)
			ring_free(d, ev);
		d->events++;
		break;
	case HT_EV_RESET:
		if (!d->discard && !d->old_image)
			ring_reset(d->proc, ev->arena);
		d->events++;
		break;
	default:
		/* HT_EV_SKIP: a position a producer gave up (counted in the header's lost). */
		break;
	}
	d->pos++;
	return 0;
}

struct unpair {
	__u64 from;
	__u32 proc, lane;
};

/*
 * A paired allocation at position from + i whose free this run did not
 * reach: its block goes into the live map now, where the free (marked
 * still, or not, by the next scan) finds it: the free looks in the live
 * map when its pair_blocks entry is not its allocation's.  Its counters
 * were added at the allocation: a block no level has room for takes them
 * off again.
 */
static long unpair_step(__u32 i, struct unpair *u)
{
	__u64 pos = u->from + i;
	struct pair_block *pb = pair_at(pos, u->lane);

	if (!pb || pb->pos != pos)
		return 0;
	struct ht_block b = pb->b, stale = {};
	__u64 key = ht_live_key(pb->ptr, u->proc);
	pb->pos = ~0ull;
	if (live_enter(key, &b, &stale, u->proc, false) == LIVE_FULL)
		release(&b, key, u->proc);
	return 0;
}

/*
 * ctx: struct ht_drain_ctx as a raw tracepoint's arguments (u64 words);
 * returns the slots consumed (done, with HT_DRAIN_AT_VOLUME), which
 * BPF_PROG_TEST_RUN hands back as the run's retval (a raw tracepoint's
 * context is not copied back).
 */
SEC("raw_tp")
int drain(__u64 *ctx)
{
	/*
	 * struct ht_drain_ctx's words, read as a raw tracepoint's context is
	 * (8 bytes at a time), not copied to the stack to be cast.
	 */
	__u64 tail = ctx[1], tgid_max = ctx[2], exec_gen = ctx[3] >> 32;
	__u32 tgid = tgid_max >> 32;
	struct drain_buf *b = HT_HERE(drain_buf);
	int proc = proc_of(tgid);

	if (!b)
		return 0;
	struct drain *d = &b->d;
	*d = (struct drain){ .ring = ctx[0], .pos = tail, .end = tail + (__u32)tgid_max, .tgid = tgid,
			     .pass_ns = bpf_ktime_get_ns(), .clock_ns = ctx[4], .clock_ticks = ctx[5],
			     .tick_mult = ctx[6], .stop_bytes = ctx[7], .lane = ctx[8] };
	d->now = d->pass_ns;
	/* Not traced (any more): what it sent is consumed, so that its threads never wait on a full ring. */
	d->discard = proc < 0;
	if (d->discard)
		d->stop_bytes = 0;
	d->proc = proc < 0 ? 0 : proc;
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &d->proc);
	d->old_image = t && t->execs != exec_gen;
	bpf_loop(HT_RING_SLOTS, drain_step, NULL, 0);
	if (d->events && !d->discard)
		count_n(d->proc, HT_RING_EVENTS, d->events);
	/* Stopped short of what drain.c paired (a slot it could not read): the blocks whose frees wait go live. */
	if (d->pos < d->end && !d->discard && !d->old_image) {
		struct unpair u = { .from = tail, .proc = d->proc, .lane = d->lane };
		bpf_loop(d->pos - tail, unpair_step, &u, 0);
	}
	site_deltas_flush_all(1);
	return (d->pos - tail) | (d->at_volume ? HT_DRAIN_AT_VOLUME : 0);
}
