/*
 * A block allocated and freed within one drain run (nearly every block of
 * a program whose live set is smaller than a run's thousands of slots)
 * need not enter the live map only to leave it again: finding its free
 * here, in user space, costs a table probe per event, where the live map
 * cost an insert and a delete in BPF hash maps (half the drain's time).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/pair.h"

#define PAIR_CAP (2 * HT_RING_SLOTS)    /* at most HT_RING_SLOTS allocations a run: half full at worst */
#define PAIR_NONE 0xffffffffu

/* ptr's entry; not there: made if add (an allocation), else NULL.  Only allocations add: at most n in 2n entries. */
static struct pair_entry *find(struct pairing *p, __u64 ptr, __u32 mask, bool add)
{
	/* Blocks are 16-byte aligned and near each other: multiply, so that neighbours spread. */
	__u32 i = (__u32)(((ptr >> 4) * 0x9e3779b97f4a7c15ull) >> 40) & mask;

	for (;;) {
		struct pair_entry *e = &p->e[i];
		if (e->gen != p->gen) {
			if (!add)
				return NULL;
			e->gen = p->gen;
			e->ptr = ptr;
			e->off = PAIR_NONE;
			return e;
		}
		if (e->ptr == ptr)
			return e;
		i = (i + 1) & mask;
	}
}

/* Smallest power of two of at least 2 * n entries (n pointers at most), 64 at least. */
static __u32 mask_for(__u32 n)
{
	__u32 cap = 64;

	while (cap < 2 * n && cap < PAIR_CAP)
		cap *= 2;
	return cap - 1;
}

__u32 pair_mark(struct pairing *p, struct ht_ev *slots, __u64 tail, __u32 n)
{
	__u32 mask = mask_for(n), k = 0;
	bool table = !p->off;

	if (table && !p->e && !(p->e = calloc(PAIR_CAP, sizeof(*p->e))))
		table = false;
	if (table && ++p->gen == 0) {
		/* 2^32 runs: the old stamps could match again. */
		memset(p->e, 0, PAIR_CAP * sizeof(*p->e));
		p->gen = 1;
	}
	while (k < n) {
		struct ht_ev *ev = &slots[(tail + k) & (HT_RING_SLOTS - 1)];
		struct pair_entry *e;

		switch (ev->kind) {
		case HT_EV_STACK: {
			/* Its frames are no events (their words overlay kind and flags): passed over whole. */
			__u32 frames = HT_RING_STACK_SLOTS(ev->depth);
			if ((__u64)k + 1 + frames > n)
				return k;
			k += 1 + frames;
			continue;
		}
		case HT_EV_ALLOC:
			ev->flags &= ~HT_EV_PAIRED;
			if (!table)
				break;
			/* A realloc's old block is freed by it, through the live map: its allocation stays unpaired. */
			if (ev->old && (e = find(p, ev->old, mask, false)))
				e->off = PAIR_NONE;
			/* An allocation not recorded leaves the ptr's earlier block live (not replaced): no change. */
			if (ev->ptr && (ev->flags & HT_STUB_SAMPLED)) {
				e = find(p, ev->ptr, mask, true);
				/* An earlier open one stays unpaired: this allocation replaces it in the live map (missed_frees). */
				e->off = ev->arena ? PAIR_NONE : k;
			}
			break;
		case HT_EV_FREE:
			/*
			 * Paired by an earlier scan with an allocation consumed
			 * since (a run held this free back): its block waits in
			 * the drain's pair_blocks.  Else the marks are this
			 * scan's to make: the stub never sets HT_EV_PAIRED.
			 */
			if ((ev->flags & HT_EV_PAIRED) && ev->old < tail) {
				p->carried++;
				break;
			}
			bool was = ev->flags & HT_EV_PAIRED;
			ev->flags &= ~HT_EV_PAIRED;
			if (!table || !ev->ptr)
				break;
			e = find(p, ev->ptr, mask, false);
			if (e && e->off != PAIR_NONE) {
				slots[(tail + e->off) & (HT_RING_SLOTS - 1)].flags |= HT_EV_PAIRED;
				ev->flags |= HT_EV_PAIRED;
				/* Counted once: an earlier scan may have made the same pair (held back, both). */
				p->pairs += !was || ev->old != tail + e->off;
				ev->old = tail + e->off;
				e->off = PAIR_NONE;   /* a second free is unmatched, as it is today */
			}
			break;
		default:
			break;
		}
		k++;
	}
	return k;
}

__u32 pair_boundary(const struct ht_ev *slots, __u64 tail, __u32 m, __u32 want)
{
	__u32 k = 0;

	while (k < want && k < m) {
		const struct ht_ev *ev = &slots[(tail + k) & (HT_RING_SLOTS - 1)];
		k += ev->kind == HT_EV_STACK ? 1 + HT_RING_STACK_SLOTS(ev->depth) : 1;
	}
	return k < m ? k : m;
}

void pair_free(struct pairing *p)
{
	free(p->e);
	p->e = NULL;
}
