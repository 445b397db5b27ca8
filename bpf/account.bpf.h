// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The accounting of a block: the live map from address to block, and what
 * a block adds to and takes off its stack's counters (sites), its arena's
 * (arena_sites) and its process's totals and peak.  One place because
 * every event that ends a block (free, realloc, reuse of the address,
 * arena reset, exec) must take off exactly what its allocation added, or
 * the in-use figures drift.
 */
#ifndef HT_ACCOUNT_BPF_H
#define HT_ACCOUNT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"
#include "config.bpf.h"
#include "counters.bpf.h"
#include "stack.bpf.h"
#include "live.bpf.h"
#include "last_alloc.bpf.h"
#include "sites.bpf.h"

/* Arena identity -> its generation and its list of (arena, stack) pairs (struct ht_arena). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct ht_arena_key);
	__type(value, struct ht_arena);
} arenas SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS);
	__type(key, struct ht_arena_site_key);
	__type(value, struct ht_arena_site);
} arena_sites SEC(".maps");

/* The arena of each live block that has one (HT_BLOCK_ARENA), by live key; sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, HT_DEFAULT_MAX_LIVE);
	__type(key, __u64);
	__type(value, struct ht_arena_block);
} arena_blocks SEC(".maps");

/*
 * The ring's drain (bpf/drain.bpf.c) changes a run's sites in a table of
 * deltas that it adds to the sites at the run's end: site_of(), site_at()
 * and site_change() are its there (site_deltas.bpf.h); a record site's
 * program changes the sites themselves.
 */
#ifdef HT_SITE_DELTAS
#include "site_deltas.bpf.h"
#else
static __always_inline void site_deltas_flush(void) {}
/* An add to a site's counter (site_of()'s or site_at()'s), which other CPUs' programs add to too. */
#define site_add(p, v) __sync_fetch_and_add(p, v)
#endif

/*
 * Every change of a site's in-use counters goes through here (or, in the
 * drain, through its deltas: site_deltas.bpf.h), and the process totals
 * with it.  A global function (HT_CHECKED_ONCE), as totals_inuse() (with
 * free_taken() global too: the drain's program 52,725 instructions
 * verified -> 34,059, stub_alloc 16,471 -> 13,064, stub_free 9,718 ->
 * 8,366).
 */
HT_CHECKED_ONCE int site_inuse(struct ht_site *s, __u32 proc, const struct inuse_delta *d)
{
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &proc);

	if (!t || !s || !d)
		return 0;
	site_epoch(s, t);
	__sync_fetch_and_add(&s->inuse_objects, d->objects);
	__sync_fetch_and_add(&s->inuse_bytes, d->bytes);
	__sync_fetch_and_add(&s->est_inuse_objects, d->est_objects);
	__sync_fetch_and_add(&s->est_inuse_bytes, d->est_bytes);
	if (totals_inuse(proc, d)) {
		site_deltas_flush();
		totals_epoch_up(proc);
	}
	return 0;
}

#ifndef HT_SITE_DELTAS
/* A stack's counters, made if new (NULL: the sites map is full, counted). */
static __always_inline struct ht_site *site_of(__u64 stack, __u32 proc)
{
	return site_find(stack, proc);
}

/* A stack's counters, if it has any. */
static __always_inline struct ht_site *site_at(__u64 stack, __u32 proc)
{
	return site_lookup(stack, proc);
}

/* A change of the in-use counters of s (site_of()'s or site_at()'s). */
static __always_inline void site_change(struct ht_site *s, __u32 proc, const struct inuse_delta *d)
{
	site_inuse(s, proc, d);
}
#endif

/*
 * log2 of v (0 for 0).  A global function (HT_CHECKED_ONCE): inlined, its
 * 32 paths were as many states the verifier carried through the rest of
 * each caller (release()'s lifetimes alone: 3,900 of stub_alloc's
 * instructions).
 */
HT_CHECKED_ONCE __u32 ht_log2(__u64 v)
{
	__u32 b = 0;

	if (v >> 32) { v >>= 32; b += 32; }
	if (v >> 16) { v >>= 16; b += 16; }
	if (v >> 8) { v >>= 8; b += 8; }
	if (v >> 4) { v >>= 4; b += 4; }
	if (v >> 2) { v >>= 2; b += 2; }
	if (v >> 1) { b += 1; }
	return b;
}

/* log2 of a block's lifetime in microseconds, as a histogram bucket. */
static __always_inline __u32 life_bucket(__u64 ns)
{
	__u32 b = ht_log2(ns / 1000);

	return b < HT_LIFE_BUCKETS ? b : HT_LIFE_BUCKETS - 1;
}

/* log2 of an allocation's size in bytes, as a histogram bucket. */
static __always_inline __u32 size_bucket(__u64 size)
{
	__u32 b = ht_log2(size);

	return b < HT_SIZE_BUCKETS ? b : HT_SIZE_BUCKETS - 1;
}

static __always_inline void count_size(__u32 proc, __u64 size, __u64 weight)
{
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &proc);

	if (!t)
		return;
	__sync_fetch_and_add(&t->alloc_sizes[size_bucket(size)], weight);
	__sync_fetch_and_add(&t->alloc_bytes, ht_weighted_bytes(size, weight));
}

/* The generation a block of this arena must carry to still be live. */
static __always_inline __u32 arena_gen(__u64 arena, __u32 proc)
{
	struct ht_arena_key key = { .arena = arena, .proc = proc };
	struct ht_arena *a = arena ? bpf_map_lookup_elem(&arenas, &key) : 0;

	return a ? a->gen : 0;
}

/* The arena's state, made (generation 0, no pairs) at its first block. */
static __always_inline struct ht_arena *arena_of(__u64 arena, __u32 proc)
{
	struct ht_arena_key key = { .arena = arena, .proc = proc };
	struct ht_arena *a = bpf_map_lookup_elem(&arenas, &key);

	if (a)
		return a;
	bpf_map_update_elem(&arenas, &key, HT_ZERO(struct ht_arena), BPF_NOEXIST);
	return bpf_map_lookup_elem(&arenas, &key);
}

/*
 * A new (arena, stack) pair goes to the front of its arena's list.  Only
 * the CPU whose NOEXIST insert made the pair links it, so a pair is in the
 * list once; the exchange lets CPUs allocating from one arena at once
 * (a thread-safe arena) each link theirs.
 */
static __always_inline bool arena_link(struct ht_arena_site *s, __u64 arena, __u64 stack, __u32 proc)
{
	struct ht_arena *a = arena_of(arena, proc);

	if (!a)
		return false;
	s->next = __sync_lock_test_and_set(&a->head, stack);
	__sync_fetch_and_add(&a->sites, 1);
	return true;
}

/*
 * A block enters (sign 1) or leaves (-1) its arena's counters for its
 * stack.  0 if the block cannot be in them (a map full, counted): it is
 * then accounted as a block without an arena, which a reset cannot free.
 * A global function: its frame is not part of account_alloc()'s, which the
 * drain's program (drain.bpf.c) calls under its loop, within the 512
 * bytes of stack a program without a private stack has in all.
 */
__noinline int arena_add(const struct ht_block *b, __u64 arena, __u32 proc, __s64 sign)
{
	if (!b)
		return 0;

	struct ht_arena_site_key key = { .arena = arena, .stack = b->stack, .proc = proc };
	struct ht_arena_site *a = bpf_map_lookup_elem(&arena_sites, &key);

	/* A pair a reset released has no blocks left to take off. */
	if (!a && sign < 0)
		return false;
	if (!a) {
		bool made = !bpf_map_update_elem(&arena_sites, &key, HT_ZERO(struct ht_arena_site), BPF_NOEXIST);
		a = bpf_map_lookup_elem(&arena_sites, &key);
		if (a && made && !arena_link(a, arena, b->stack, proc)) {
			bpf_map_delete_elem(&arena_sites, &key);
			a = NULL;
		}
		if (!a) {
			count(proc, HT_ARENA_MAP_FULL);
			return false;
		}
	}
	struct inuse_delta d = block_delta(b, sign);
	__sync_fetch_and_add(&a->inuse_blocks, sign);
	__sync_fetch_and_add(&a->inuse_objects, d.objects);
	__sync_fetch_and_add(&a->inuse_bytes, d.bytes);
	__sync_fetch_and_add(&a->est_inuse_objects, d.est_objects);
	__sync_fetch_and_add(&a->est_inuse_bytes, d.est_bytes);
	return true;
}

/* A live block's arena (arena_blocks), if it has one. */
static __always_inline struct ht_arena_block *block_arena(const struct ht_block *b, __u64 key)
{
	return b->flags & HT_BLOCK_ARENA ? bpf_map_lookup_elem(&arena_blocks, &key) : NULL;
}

/*
 * An unmatched free charged to the stack h it came from (a site of its own,
 * no allocations: -f top's "unmatched frees"), HT_STACK_LOST: to none.
 */
static __always_inline void unmatched_at(__u64 h, __u32 proc)
{
	struct ht_site *s = h != HT_STACK_LOST ? site_of(h, proc) : NULL;

	if (s)
		site_add(&s->unmatched_frees, 1);
}

/* The counters of a block's stack (NULL: the sites map was full at its allocation). */
static __always_inline struct ht_site *block_site(const struct ht_block *b, __u32 proc)
{
	return site_at(b->stack, proc);
}

/*
 * A live block (at key) leaves the in-use counters of its stack (s:
 * block_site()).  A block of an arena that was reset since it was
 * allocated left them at the reset already.  Its arena_blocks entry stays:
 * the caller deletes or replaces it.
 */
static __always_inline bool release_at(struct ht_site *s, struct ht_block *b, __u64 live_key, __u32 proc)
{
	struct ht_arena_block *ab = block_arena(b, live_key);
	__u64 arena = ab ? ab->arena : 0;

	if (ab && ab->gen != arena_gen(arena, proc))
		return false;
	if (s) {
		struct inuse_delta d = block_delta(b, -1);
		site_change(s, proc, &d);
	}
	if (ab)
		arena_add(b, arena, proc, -1);
	return true;
}

static __always_inline bool release(struct ht_block *b, __u64 live_key, __u32 proc)
{
	return release_at(block_site(b, proc), b, live_key, proc);
}

/*
 * A block freed by the program (not a reset) at now (0: the current time):
 * its lifetime, and whether it was temporary, go to its stack (s:
 * block_site()).
 */
static __always_inline void record_free_at(struct ht_site *s, const struct ht_block *b, bool temporary, __u64 now)
{
	__u64 life = (now ? now : bpf_ktime_get_ns()) - b->time_ns;

	if (!s)
		return;
	site_add(&s->lifetimes[life_bucket(life)], 1);
	if (temporary)
		site_add(&s->temporary, 1);
}

static __always_inline void record_free(const struct ht_block *b, __u32 proc, bool temporary, __u64 now)
{
	record_free_at(block_site(b, proc), b, temporary, now);
}

/* A followed child frees what it inherited: the block is live in its parent's slot. */
static __always_inline bool inherited(__u64 ptr, __u32 proc, __u32 tgid)
{
	struct ht_proc *p = proc ? bpf_map_lookup_elem(&procs, &tgid) : 0;

	if (!p)
		return false;
	return live_has(ht_live_key(ptr, p->parent));
}

/*
 * A free of a block that is not live: a parent's block, or one never seen
 * allocated.  True for an unmatched free, which the caller counts: who
 * called free decides under which counter (calls.bpf.h, free_entry()).
 */
static __always_inline bool free_unknown(__u64 ptr, __u32 proc, __u32 tgid)
{
	if (inherited(ptr, proc, tgid)) {
		count(proc, HT_INHERITED_FREES);
		return false;
	}
	/* Sampling: most blocks were never recorded, and their frees are no news. */
	return !sample_rate;
}

/*
 * A free of block b (live key key), out of the live map (or never in it:
 * an allocation the drain paired with its free, bpf/drain.bpf.c) by the
 * thread whose last allocation is l (may be NULL), at now (0: the current
 * time).  A global function, checked once for its callers (free_entry's
 * paths, realloc's, the drain's two).
 */
__noinline int free_taken(struct ht_block *b, __u64 key, __u32 proc, struct ht_last_alloc *l, __u64 now)
{
	if (!b)
		return 0;

	bool temporary = follows_last_alloc(l, b);
	struct ht_site *s = block_site(b, proc);

	/* One lookup of the stack's counters for both. */
	if (release_at(s, b, key, proc)) {
		record_free_at(s, b, temporary, now);
		count(proc, HT_FREES);
	}
	if (b->flags & HT_BLOCK_ARENA)
		bpf_map_delete_elem(&arena_blocks, &key);
	return 0;
}

/* An allocation, its stack captured: what account_alloc() records. */
struct alloc_rec {
	__u64 stack, ptr, size, objects, arena;
	__u64 reallocs, realloc_bytes;  /* a realloc of a block: 1, and the bytes it copied */
	__u64 now;                      /* when it was made; 0: the current time */
	__u32 proc;
	__u32 flags;                    /* HT_BLOCK_MAP for a mapping (bpf/maps.bpf.h), ALLOC_PAIRED, else 0 */
};

/*
 * An allocation being accounted, per CPU: its record (filled by the
 * caller, alloc_rec_here()), account_alloc()'s two blocks, and the block a
 * free takes out of the live map.  On the stack they took 176 bytes of
 * the 512 that a program's deepest call chain has in all where the kernel
 * gives BPF no private stack (Linux before 6.13, and some after).  A
 * program runs to its end on its CPU and none of them accounts two
 * allocations, or two frees, at once.
 */
struct alloc_work {
	struct alloc_rec r;
	struct ht_block b, stale;
	struct ht_block taken;  /* free_live_sized()'s */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct alloc_work);
} alloc_work SEC(".maps");

static __always_inline struct alloc_work *alloc_work_here(void)
{
	return HT_HERE(alloc_work);
}

/* This CPU's record of the allocation to account (account_alloc()'s argument). */
static __always_inline struct alloc_rec *alloc_rec_here(void)
{
	struct alloc_work *w = alloc_work_here();

	return w ? &w->r : NULL;
}

/*
 * A free of ptr at now (0: the current time) by the thread whose last
 * allocation is l (may be NULL), if it is a live block (its size in
 * *size); false if it is not (the caller tells why).
 */
static __always_inline bool free_live_sized(__u64 ptr, __u32 proc, struct ht_last_alloc *l, __u64 now, __u64 *size)
{
	__u64 key = ht_live_key(ptr, proc);
	struct alloc_work *w = alloc_work_here();
	struct ht_block *b = w ? &w->taken : NULL;
	int r = b ? live_take(key, b) : -1;

	if (r < 0)
		return false;
	/* Only the remover accounts the free, so a racing double free counts once. */
	if (r)
		return true;
	*size = b->size;
	free_taken(b, key, proc, l, now);
	return true;
}

static __always_inline bool free_live(__u64 ptr, __u32 proc, struct ht_last_alloc *l, __u64 now)
{
	__u64 size;

	return free_live_sized(ptr, proc, l, now, &size);
}

/*
 * A free of ptr by a thread of process tgid (its last allocation: l);
 * true for an unmatched one, which the caller counts.  *size: a live
 * block's, else kept.
 */
static __always_inline bool free_block_sized(__u64 ptr, __u32 proc, struct ht_last_alloc *l, __u32 tgid,
					     __u64 now, __u64 *size)
{
	return !free_live_sized(ptr, proc, l, now, size) && free_unknown(ptr, proc, tgid);
}

/*
 * alloc_rec.flags: the block is freed later in the same drain run
 * (bpf/drain.bpf.c, which keeps it for that free): it does not go into the
 * live map, but a live block at its address still comes out (its free went
 * unseen), as live_put() would replace it.  Never with an arena.
 */
#define ALLOC_PAIRED (1u << 31)

/* The block an allocation makes (account_alloc()'s, and the one the drain keeps for a paired free). */
static __always_inline struct ht_block alloc_block(const struct alloc_rec *r)
{
	struct ht_block b = { .size = r->size, .time_ns = r->now ? r->now : bpf_ktime_get_ns(), .stack = r->stack,
			      .objects = r->objects,
			      .flags = (r->arena ? HT_BLOCK_ARENA : 0) | (r->flags & HT_BLOCK_MAP) };
	return b;
}

/*
 * A block that was live at key when its address was handed out again (out
 * of the live map now): its free went unseen, or its arena was reset.
 */
static __always_inline void drop_stale(struct ht_block *stale, __u64 key, __u32 proc)
{
	struct ht_site *ss = block_site(stale, proc);

	if (!release_at(ss, stale, key, proc))
		return;
	/* Charged to the stack that allocated it too: -f top shows where the unseen frees are. */
	if (ss)
		site_add(&ss->missed_frees, 1);
	count(proc, HT_MISSED_FREES);
}

/*
 * Block b at key into the live map (paired: only a block live at its
 * address comes out, bpf/drain.bpf.c keeps b), the block that was live
 * there dropped (drop_stale(): into *stale), a full map counted.
 * live_put()'s result.
 */
static __always_inline int live_enter(__u64 key, struct ht_block *b, struct ht_block *stale, __u32 proc, bool paired)
{
	/* Paired: almost never a block there, and the filter says so without the live map's lookup. */
	int put = paired ? (live_may_have(key) && !live_take(key, stale) ? LIVE_REPLACED : LIVE_ADDED)
			 : live_put(key, b, stale);

	if (put == LIVE_FULL)
		count(proc, HT_LIVE_MAP_FULL);
	else if (put == LIVE_REPLACED)
		drop_stale(stale, key, proc);
	return put;
}

/*
 * The block into the live map and the counters; 1 if it is live there
 * (the caller called set_last_alloc() first).  A global function: the
 * verifier checks it once, not once for every path of the allocation
 * programs that reaches it (realloc's, posix_memalign's, sampled or not).
 */
__noinline int account_alloc(struct alloc_rec *r)
{
	struct alloc_work *w = alloc_work_here();

	if (!r || !w)
		return 0;

	__u32 proc = r->proc;
	__u64 ptr = r->ptr, size = r->size, objects = r->objects, arena = r->arena;
	struct ht_block *b = &w->b, *stale = &w->stale;
	*b = alloc_block(r);
	struct ht_arena_block ab = { .arena = arena, .gen = arena_gen(arena, proc) };
	__u64 key = ht_live_key(ptr, proc), weight = ht_weight_q16(size, sample_rate);

	struct ht_site *s = site_of(b->stack, proc);
	if (!s)
		return 0;
	site_add(&s->alloc_objects, objects);
	site_add(&s->alloc_bytes, size);
	site_add(&s->est_alloc_objects, weight * b->objects);
	site_add(&s->est_alloc_bytes, ht_weighted_bytes(size, weight));
	if (r->reallocs) {
		site_add(&s->realloc_objects, r->reallocs);
		site_add(&s->realloc_bytes, r->realloc_bytes);
	}
	count(proc, HT_ALLOCS);
	count_size(proc, size, weight);

	*stale = (struct ht_block){};
	int put = live_enter(key, b, stale, proc, r->flags & ALLOC_PAIRED);
	if (put == LIVE_FULL)
		return 0;
	/* The stale block's counters were changed since: in the drain, its stack may have taken s's entry. */
	if (put == LIVE_REPLACED && !(s = site_of(b->stack, proc)))
		return 0;
	/* The address was handed out again: the block it replaced may have had an arena entry at the key. */
	bool stale_arena = put == LIVE_REPLACED && (stale->flags & HT_BLOCK_ARENA);
	struct inuse_delta d = block_delta(b, 1);
	d.ns = b->time_ns;
	site_change(s, proc, &d);
	/* A block its arena's maps cannot hold is counted in its stack alone: a reset cannot release it. */
	bool in_arena = arena && arena_add(b, arena, proc, 1);
	if (in_arena && bpf_map_update_elem(&arena_blocks, &key, &ab, BPF_ANY)) {
		arena_add(b, arena, proc, -1);
		count(proc, HT_ARENA_MAP_FULL);
		in_arena = false;
	}
	if (!in_arena && stale_arena)
		bpf_map_delete_elem(&arena_blocks, &key);
	return 1;
}

static __always_inline void record_alloc(struct pt_regs *ctx, struct pt_regs *regs, __u64 func_ip, __u32 proc,
					 __u32 spec, __u64 ptr, __u64 size, __u64 objects, __u64 arena,
					 __u64 reallocs, __u64 realloc_bytes)
{
	__u64 stack = capture_stack(ctx, regs, proc, spec, func_ip);
	struct alloc_rec *r = alloc_rec_here();

	set_last_alloc(current_last_alloc_made(proc), stack, size);
	if (!r)
		return;
	*r = (struct alloc_rec){ .stack = stack, .ptr = ptr, .size = size, .objects = objects, .arena = arena,
				 .reallocs = reallocs, .realloc_bytes = realloc_bytes, .proc = proc };
	account_alloc(r);
}

struct reset_ctx {
	__u64 arena;
	__u64 next;         /* the stack of the next pair to release */
	__u64 blocks, objects;
	__u32 proc;
	__u32 lost;         /* the walk ended at a pair that is not there */
};

/* Release one (arena, stack) pair's in-use counts from its stack's counters, and the pair. */
static long reset_step(__u32 i, struct reset_ctx *rc)
{
	struct ht_arena_site_key key = { .arena = rc->arena, .stack = rc->next, .proc = rc->proc };
	struct ht_arena_site *a = bpf_map_lookup_elem(&arena_sites, &key);

	if (!a) {
		/* Only a reset racing an allocation from the same arena (a race in the target) breaks the list. */
		rc->lost = 1;
		return 1;
	}
	struct ht_site_key sk = { .stack = key.stack, .proc = rc->proc };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &sk);
	struct inuse_delta d = { -a->inuse_objects, -a->inuse_bytes, -a->est_inuse_objects, -a->est_inuse_bytes };
	if (s) {
		site_inuse(s, rc->proc, &d);
		__sync_fetch_and_add(&s->reset_frees, a->inuse_blocks);
	}
	rc->blocks += a->inuse_blocks;
	rc->objects += a->inuse_objects;
	rc->next = a->next;
	bpf_map_delete_elem(&arena_sites, &key);
	return 0;
}

/*
 * An arena reset frees every block allocated from the arena.  Rather than
 * visit every live block, it releases the arena's per-stack totals (its
 * list of pairs: an empty arena costs one lookup) and starts a new
 * generation: blocks of older generations are dead, and are dropped
 * silently when their address comes back or they are freed.
 */
static __always_inline void reset_arena(__u32 proc, __u64 arena)
{
	struct reset_ctx rc = { .arena = arena, .proc = proc };

	if (!rc.arena)
		return;

	count(proc, HT_ARENA_RESETS);
	struct ht_arena *a = arena_of(rc.arena, proc);
	if (!a) {
		/* Its blocks, if any, were counted as arena_map_full when they were allocated. */
		count(proc, HT_ARENA_MAP_FULL);
		return;
	}
	__sync_fetch_and_add(&a->gen, 1);
	/* Take the list: pairs made from here on belong to the new generation's list. */
	__u32 n = __sync_lock_test_and_set(&a->sites, 0);
	rc.next = __sync_lock_test_and_set(&a->head, 0);
	if (!n)
		return;
	__u32 walk = n < HT_RESET_WALK_MAX ? n : HT_RESET_WALK_MAX;
	long done = bpf_loop(walk, reset_step, &rc, 0);
	if (done < 0)
		done = 0;
	if (rc.lost && done > 0)
		done--;         /* the step that found nothing */
	if ((__u64)done < n)
		count_n(proc, HT_ARENA_INDEX_LOST, n - done);
	count_n(proc, HT_RESET_FREES, rc.blocks);
	count_n(proc, HT_RESET_OBJECTS, rc.objects);
}

static __always_inline bool is_live(__u64 ptr, __u32 proc)
{
	return live_has(ht_live_key(ptr, proc));
}

#endif /* HT_ACCOUNT_BPF_H */
