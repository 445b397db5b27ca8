// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The counters of a stack (sites) and of a process (totals, its peak and
 * peak epochs), and the primitives that change them.  Below both ways of
 * changing a site: a record site's program changes it in place
 * (account.bpf.h), the drain through a run's deltas (site_deltas.bpf.h).
 */
#ifndef HT_SITES_BPF_H
#define HT_SITES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"
#include "config.bpf.h"
#include "counters.bpf.h"

/*
 * Sized by the loader before load (--max-stacks).  Not preallocated, as
 * none of the hash maps here: a map's memory is what it holds (the arena
 * maps are sized 1 unless a spec has an arena).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS + 1);
	__type(key, struct ht_site_key);
	__type(value, struct ht_site);
} sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_PROCS);
	__type(key, __u32);             /* process slot */
	__type(value, struct ht_totals);
} totals SEC(".maps");

/* A change of in-use counters: raw counts and estimates (see struct ht_site). */
struct inuse_delta {
	__s64 objects, bytes;
	__s64 est_objects, est_bytes;   /* Q16, bytes */
	__u64 ns;                       /* an allocation's time (a drained event's is its stamp); 0: now */
};

/* What one block adds to (sign 1) or takes off (-1) the in-use counters. */
static __always_inline struct inuse_delta block_delta(const struct ht_block *b, __s64 sign)
{
	__u64 weight = ht_weight_q16(b->size, sample_rate);
	struct inuse_delta d = {
		.objects = sign * b->objects,
		.bytes = sign * (__s64)b->size,
		.est_objects = sign * (__s64)(weight * b->objects),
		.est_bytes = sign * (__s64)ht_weighted_bytes(b->size, weight),
	};
	return d;
}

/* A stack's counters, made at its first allocation. */
static __always_inline struct ht_site *site_find(__u64 stack, __u32 proc)
{
	struct ht_site_key key = { .stack = stack, .proc = proc };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &key);

	if (s)
		return s;
	/* Two CPUs may race to create it: NOEXIST lets one win, both then share it. */
	bpf_map_update_elem(&sites, &key, HT_ZERO(struct ht_site), BPF_NOEXIST);
	s = bpf_map_lookup_elem(&sites, &key);
	if (!s)
		count(proc, HT_SITE_MAP_FULL);
	return s;
}

static __always_inline struct ht_site *site_lookup(__u64 stack, __u32 proc)
{
	struct ht_site_key key = { .stack = stack, .proc = proc };

	return bpf_map_lookup_elem(&sites, &key);
}

/*
 * A site's at-peak values, copied before its first change after a new
 * peak epoch: until then its in-use values are the ones at the peak.
 */
static __always_inline void site_epoch(struct ht_site *s, const struct ht_totals *t)
{
	if (s->epoch != t->epoch) {
		s->peak_objects = s->est_inuse_objects;
		s->peak_bytes = s->est_inuse_bytes;
		s->epoch = t->epoch;
	}
}

/*
 * A change of a process's in-use totals: it keeps the peak.  1 when in-use
 * rose a step above the last at-peak state: the caller starts a new peak
 * epoch (totals_epoch_up()), after the drain's pending changes reached
 * their sites (site_deltas.bpf.h), in the epoch they were made in.  A global
 * function (HT_CHECKED_ONCE): the verifier checks its peak's branches
 * once, not in each of its callers.
 */
HT_CHECKED_ONCE int totals_inuse(__u32 proc, const struct inuse_delta *d)
{
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &proc);

	if (!t || !d)
		return 0;
	__s64 bytes = d->est_bytes;
	__sync_fetch_and_add(&t->inuse_objects, d->est_objects);
	__s64 now = __sync_fetch_and_add(&t->inuse_bytes, bytes) + bytes;
	if (bytes <= 0 || now <= (__s64)t->peak_bytes)
		return 0;
	/*
	 * Racing CPUs may each see a new peak; the last writer wins, off by one
	 * allocation at most.  The moment is the allocation's: a drained
	 * event's stamp, not its drain pass's time (up to a period later).
	 */
	__u64 ns = d->ns ? d->ns : bpf_ktime_get_ns();
	t->peak_bytes = now;
	t->peak_ns = ns;
	__u64 step = peak_step;
	if (!step) {
		step = t->epoch_bytes / 20;
		if (step < (1 << 20))
			step = 1 << 20;
	}
	if (now <= (__s64)(t->epoch_bytes + step))
		return 0;
	t->epoch_bytes = now;
	t->epoch_ns = ns;
	return 1;
}

/* A new peak epoch: each site copies its at-peak values at its first change from now on (site_epoch()). */
static __always_inline void totals_epoch_up(__u32 proc)
{
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &proc);

	if (t)
		__sync_fetch_and_add(&t->epoch, 1);
}


#endif /* HT_SITES_BPF_H */
