// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live-block map: address -> block, in levels (HT_LIVE_LEVELS in
 * heaptrace.h says why).  User space creates level 0 at load and each next
 * level when the blocks reach live_grow_at, which this side reports through
 * the live_grow ring buffer.  Where a ring's drain fills them the levels
 * are preallocated: a hash map that is not allocates each element when it
 * is inserted and frees it when it is deleted (the kernel's BPF
 * allocator), and that was half of what an event cost the drain
 * (bench-python's loop: 644 ns a slot, 316 preallocated).  Such a level
 * takes its memory when it is made, and levels are made as the blocks
 * grow.  Where uprobes fill them they are not (user/tracer/levels.c).
 *
 * An address is in one level at most.  Blocks go to the newest level, or
 * to an older one with room when it is full, so live_map_full counts only
 * blocks that found no room in any level.  Lookups start from the newest.
 */
#ifndef HT_LIVE_BPF_H
#define HT_LIVE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"

struct live_level {
	__uint(type, BPF_MAP_TYPE_HASH);        /* user space makes the levels, and their flags (levels.c); libbpf's are preallocated */
	__uint(max_entries, 1);         /* each level is sized by user space */
	/* Sizes, not types: clang would give the inner map only a declaration of struct ht_block. */
	__uint(key_size, sizeof(__u64));        /* ht_live_key() */
	__uint(value_size, sizeof(struct ht_block));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, HT_LIVE_LEVELS);
	__type(key, __u32);
	__array(values, struct live_level);
} live SEC(".maps");

/* One wake-up of user space per level to add: the count that reached live_grow_at. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} live_grow SEC(".maps");

/*
 * Their own section (map), away from the settings every event reads:
 * live_count is written by every tracked allocation and free.  live_top and
 * live_grow_at are written by user space, live_top after the level is in
 * the live map.
 */
volatile __u64 live_count SEC(".data.live") = 0;       /* blocks in all levels */
volatile __u64 live_grow_at SEC(".data.live") = 0;     /* 0: no level to add */
volatile __u32 live_top SEC(".data.live") = 0;         /* the newest level */

/*
 * How many live keys each slot of ht_live_filter_slot() has (heaptrace.h
 * says why).  Never below the truth: a count is raised before every insert
 * into a level (live_put(), the one function that inserts) and lowered
 * after every delete that removed an element (live_delete_in(), the one
 * that deletes), so a reader that sees 0 would have found no block.  User
 * space neither inserts into the levels nor deletes from them.  Shared by
 * the objects that share the levels (by name, as the maps above).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_LIVE_FILTER_SLOTS / HT_LIVE_FILTER_LANES);
	__type(key, __u32);
	__type(value, struct ht_live_filter_cell);
} live_filter SEC(".maps");

static __always_inline void *live_level(__u32 level)
{
	return bpf_map_lookup_elem(&live, &level);
}

/* The filter's count for key (NULL only if the array lost a cell, which it cannot). */
static __always_inline __u32 *live_filter_at(__u64 key)
{
	__u32 slot = ht_live_filter_slot(key), cell = slot / HT_LIVE_FILTER_LANES;
	struct ht_live_filter_cell *c = bpf_map_lookup_elem(&live_filter, &cell);

	return c ? &c->n[slot % HT_LIVE_FILTER_LANES] : NULL;
}

static __always_inline void live_filter_add(__u64 key, __s32 d)
{
	/* Only a ring's drain reads it: a session that cannot batch (--no-inject, sampled) keeps none. */
	if (!live_filter_on)
		return;
	__u32 *n = live_filter_at(key);

	if (n)
		__sync_fetch_and_add(n, d);
}

/* May a block be live at key?  False only when none is: its slot counts no key. */
static __always_inline bool live_may_have(__u64 key)
{
	__u32 *n = live_filter_on ? live_filter_at(key) : NULL;

	return !n || *(volatile __u32 *)n;
}

/*
 * The operations below are global functions: the verifier checks each once,
 * not once per path of every caller (the loop over the levels multiplied
 * the states of the allocation programs tenfold).  Pointers may be NULL to
 * the verifier: they are checked.
 */

/* The block at key, newest level first (young blocks are freed soonest), and its level. */
static __always_inline struct ht_block *live_find(__u64 *key, __u32 *level)
{
	__u32 top = live_top;

	for (__u32 i = 0; i < HT_LIVE_LEVELS && i <= top; i++) {
		__u32 l = top - i;
		void *m = live_level(l);
		struct ht_block *b = m ? bpf_map_lookup_elem(m, key) : NULL;

		if (b) {
			*level = l;
			return b;
		}
	}
	return NULL;
}

/* Remove the block at key from a level's map: 0 for the one caller that removed it. */
static __always_inline long live_delete_in(void *map, __u64 *key)
{
	long err = bpf_map_delete_elem(map, key);

	if (!err) {
		__sync_fetch_and_add(&live_count, -1);
		live_filter_add(*key, -1);      /* after the delete: the count never falls below the keys */
	}
	return err;
}

/* Is the address (its live key) live? */
__noinline int live_has(__u64 key)
{
	__u32 level;

	return live_find(&key, &level) != NULL;
}

/*
 * The block at key out of the live map into *out: 0 for the one caller
 * that removed it, 1 for a caller that found it but lost the race (a
 * double free), -1 if it is not live.
 */
__noinline int live_take(__u64 key, struct ht_block *out)
{
	__u32 level;
	struct ht_block *b = live_find(&key, &level);
	void *m = b ? live_level(level) : NULL;

	if (!m || !out)
		return -1;
	*out = *b;
	return live_delete_in(m, &key) ? 1 : 0;
}

#define HT_EEXIST 17    /* the kernel's errno, not in vmlinux.h */

enum live_put_result {
	LIVE_ADDED,
	LIVE_REPLACED,  /* the address was live: that block is in *stale, out of the map */
	LIVE_FULL,      /* no level had room */
};

/*
 * An older copy of the address at level l, out into *stale: LIVE_REPLACED,
 * or LIVE_ADDED for none (or one a free took meanwhile), -1 for none at
 * all.  Inlined into live_drop_other(), a global function that the
 * verifier walks once on its own (inlined into stub_alloc, the loop's 8
 * unrolled levels were 1,800 of its instructions): as a function of its
 * own, its frame was one more in every chain below live_put(), which
 * must fit 512 bytes of stack with the program's where BPF has no
 * private stack.
 */
static __always_inline int live_drop_at(__u64 key, __u32 l, struct ht_block *stale)
{
	void *o = live_level(l);
	struct ht_block *old = o && stale ? bpf_map_lookup_elem(o, &key) : NULL;

	if (!old)
		return -1;
	*stale = *old;
	return live_delete_in(o, &key) ? LIVE_ADDED : LIVE_REPLACED;
}

/*
 * After a put at level: levels after the one that took it were not
 * searched, and an older copy of the address there is stale.  A function
 * of its own, checked once for any level: inlined, each level the put's
 * first loop could end at was a walk of this loop for the verifier.
 */
__noinline int live_drop_other(__u64 key, __u32 level, struct ht_block *stale)
{
	__u32 top = live_top;

	if (!stale)
		return LIVE_ADDED;
	for (__u32 l = 0; l < HT_LIVE_LEVELS && l <= top; l++) {
		int r = l == level ? -1 : live_drop_at(key, l, stale);

		if (r >= 0)
			return r;
	}
	return LIVE_ADDED;
}

/*
 * live_put()'s insert: LIVE_FULL, LIVE_REPLACED, or the level that took
 * the new block (LIVE_LEVEL(l)), where live_drop_other() must look next.
 */
#define LIVE_LEVEL(l) (LIVE_FULL + 1 + (int)(l))

__noinline int live_insert(__u64 key, struct ht_block *bp, struct ht_block *stale)
{
	__u32 top = live_top, level = 0;
	long err = -1;
	void *m = NULL;

	if (!bp || !stale)
		return LIVE_FULL;
	/* Linux 6.1's verifier inserts a map value from the stack, not from a global function's argument. */
	struct ht_block v = *bp, *b = &v;
	/* Before the insert: a paired allocation that reads 0 meanwhile would not have found it either. */
	live_filter_add(key, 1);
	for (__u32 i = 0; i < HT_LIVE_LEVELS && i <= top; i++) {
		level = top - i;
		m = live_level(level);
		if (!m)
			continue;
		/*
		 * 32 bits: Linux 6.1's verifier calls the map's own update, which
		 * returns an int (the upper half of R0 is not its sign: -EEXIST
		 * read as 64 bits is 0xffffffef), where later kernels return long.
		 */
		err = (int)bpf_map_update_elem(m, &key, b, BPF_NOEXIST);
		/* Else full, or out of memory for an element: an older level may have room. */
		if (!err || err == -HT_EEXIST)
			break;
	}
	/* No element added (a replaced one keeps the count its insert took): the count back. */
	if (err)
		live_filter_add(key, -1);
	if (err == -HT_EEXIST && m) {
		struct ht_block *old = bpf_map_lookup_elem(m, &key);
		if (!old)
			return LIVE_FULL;       /* freed meanwhile: its free accounted it */
		*stale = *old;
		return bpf_map_update_elem(m, &key, b, BPF_EXIST) ? LIVE_FULL : LIVE_REPLACED;
	}
	if (err)
		return LIVE_FULL;
	__u64 n = __sync_fetch_and_add(&live_count, 1) + 1;
	if (n == live_grow_at)
		bpf_ringbuf_output(&live_grow, &n, sizeof(n), 0);
	return LIVE_LEVEL(level);
}

/*
 * A new block at key, into the newest level with room (an older one when it
 * is full: live_map_full counts only blocks no level had room for).  The
 * address may be live already (its free went unseen, or its arena was
 * reset): that block comes out, into *stale.  Two global functions one
 * after the other, not one calling the other: the chain below a caller is
 * the deeper of their frames, not their sum (512 bytes in all where BPF
 * has no private stack).
 */
static __always_inline int live_put(__u64 key, struct ht_block *b, struct ht_block *stale)
{
	int r = live_insert(key, b, stale);

	return r > LIVE_FULL ? live_drop_other(key, r - LIVE_LEVEL(0), stale) : r;
}

#endif /* HT_LIVE_BPF_H */
