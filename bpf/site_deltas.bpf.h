// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The drain's changes to the sites, held for the length of a run
 * (bpf/drain.bpf.c; included by account.bpf.h when HT_SITE_DELTAS is
 * defined).  A record site's program changes one site an event; the drain
 * changes the same few sites thousands of times a run (a program's
 * allocations come in runs of a few stacks), and the sites map's lookup
 * was a third of its cost a pair.  So a run adds each event's changes to
 * a small table of deltas, direct-mapped by stack (an array: the verifier
 * inlines its lookup), and adds each delta to its site once, when the run
 * ends, when another stack needs its entry, or before a new peak epoch
 * starts (the peak's per-site values are copied at a site's first change
 * in an epoch: a change must reach its site in the epoch it was made in).
 *
 * The process totals and the peak are changed at each event, as before:
 * a run's sites lag its totals by at most one run (readers take the maps
 * as they find them, between runs or not).  One run at a time (drain.c's
 * lock): one table for all rings.
 */
#ifndef HT_SITE_DELTAS_BPF_H
#define HT_SITE_DELTAS_BPF_H

#include "sites.bpf.h"

#define SITE_DELTAS 64          /* entries, a power of 2 */

struct site_delta {
	__u64 stack;
	__u32 proc;
	__u32 used;             /* the entry holds the changes of (stack, proc), whose site exists */
	/*
	 * The changes, in the site's own layout; epoch says that the in-use
	 * counters changed (even by 0 in all: a change copies the at-peak
	 * values all the same), peak_* are not used.
	 */
	struct ht_site d;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SITE_DELTAS);
	__type(key, __u32);
	__type(value, struct site_delta);
} site_deltas SEC(".maps");

/* An add to an entry's counter: the entries are the drain's alone (one run at a time). */
#define site_add(p, v) (*(p) += (v))

static __always_inline void add_nz(__u64 *to, __u64 v)
{
	if (v)
		__sync_fetch_and_add(to, v);
}

static __always_inline void add_nz32(__u32 *to, __u32 v)
{
	if (v)
		__sync_fetch_and_add(to, v);
}

/*
 * An entry's changes into its site, and the entry emptied; release: free
 * for another stack (else its caller may still hold it: it stays the
 * stack's).  A site gone since (its process's entries deleted at its exit)
 * takes nothing.
 */
static __always_inline int delta_flush(struct site_delta *e, int release)
{
	if (!e || !e->used)
		return 0;

	struct ht_site *s = site_lookup(e->stack, e->proc);
	struct ht_site *d = &e->d;

	if (release)
		e->used = 0;
	if (!s)
		goto out;
	if (d->epoch) {
		__u32 proc = e->proc;
		struct ht_totals *t = bpf_map_lookup_elem(&totals, &proc);
		if (t)
			site_epoch(s, t);
		add_nz((__u64 *)&s->inuse_objects, d->inuse_objects);
		add_nz((__u64 *)&s->inuse_bytes, d->inuse_bytes);
		add_nz((__u64 *)&s->est_inuse_objects, d->est_inuse_objects);
		add_nz((__u64 *)&s->est_inuse_bytes, d->est_inuse_bytes);
	}
	add_nz(&s->alloc_objects, d->alloc_objects);
	add_nz(&s->alloc_bytes, d->alloc_bytes);
	add_nz(&s->est_alloc_objects, d->est_alloc_objects);
	add_nz(&s->est_alloc_bytes, d->est_alloc_bytes);
	add_nz(&s->temporary, d->temporary);
	add_nz(&s->realloc_objects, d->realloc_objects);
	add_nz(&s->realloc_bytes, d->realloc_bytes);
	for (__u32 i = 0; i < HT_LIFE_BUCKETS; i++)
		add_nz32(&s->lifetimes[i], d->lifetimes[i]);
	add_nz32(&s->reset_frees, d->reset_frees);
	add_nz32(&s->missed_frees, d->missed_frees);
	add_nz32(&s->unmatched_frees, d->unmatched_frees);
out:
	__builtin_memset(d, 0, sizeof(*d));
	return 0;
}

/* delta_flush(), a global function: checked once for its callers. */
__noinline int site_delta_flush(struct site_delta *e, int release)
{
	return delta_flush(e, release);
}

/*
 * Every entry into its site; release: the run ends, the entries are free.
 * Its own copy of the flush, not a call of site_delta_flush(): it is
 * called at a new peak epoch from below account_alloc(), where a frame
 * more made the drain's deepest call chain 544 bytes (512 in all where
 * BPF has no private stack).
 */
__noinline int site_deltas_flush_all(int release)
{
	for (__u32 i = 0; i < SITE_DELTAS; i++) {
		__u32 k = i;
		delta_flush(bpf_map_lookup_elem(&site_deltas, &k), release);
	}
	return 0;
}

/* Before a new peak epoch: the entries stay their stacks' (a caller may hold one). */
static __always_inline void site_deltas_flush(void)
{
	site_deltas_flush_all(0);
}

/*
 * The entry of (stack, proc), taken over from the stack it held (whose
 * changes go to their site first) when its site exists (find: made if
 * new, as site_find() makes it), else NULL.
 */
static __always_inline struct ht_site *site_delta(__u64 stack, __u32 proc, bool find)
{
	__u32 k = (stack ^ (stack >> 29) ^ proc) & (SITE_DELTAS - 1);
	struct site_delta *e = bpf_map_lookup_elem(&site_deltas, &k);

	if (!e)
		return NULL;
	if (e->used && e->stack == stack && e->proc == proc)
		return &e->d;
	if (!(find ? site_find(stack, proc) : site_lookup(stack, proc)))
		return NULL;
	site_delta_flush(e, 1);
	e->stack = stack;
	e->proc = proc;
	e->used = 1;
	return &e->d;
}

static __always_inline struct ht_site *site_of(__u64 stack, __u32 proc)
{
	return site_delta(stack, proc, true);
}

static __always_inline struct ht_site *site_at(__u64 stack, __u32 proc)
{
	return site_delta(stack, proc, false);
}

/* A change of the in-use counters of s (site_of()'s or site_at()'s: an entry's changes), and of the totals. */
static __always_inline void site_change(struct ht_site *s, __u32 proc, const struct inuse_delta *d)
{
	s->epoch = 1;
	s->inuse_objects += d->objects;
	s->inuse_bytes += d->bytes;
	s->est_inuse_objects += d->est_objects;
	s->est_inuse_bytes += d->est_bytes;
	/* The pending changes reach their sites in the epoch they were made in. */
	if (totals_inuse(proc, d)) {
		site_deltas_flush();
		totals_epoch_up(proc);
	}
}

#endif /* HT_SITE_DELTAS_BPF_H */
