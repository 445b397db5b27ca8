/*
 * Pairs within one drain run (user/tracer/drain.c): each allocation in
 * the published slots with the first later free of its block in the same
 * slots, marked HT_EV_PAIRED in both, so that bpf/drain.bpf.c accounts the
 * pair without the live map (docs/fast-path.md, "Pairs").
 */
#ifndef HT_TRACER_PAIR_H
#define HT_TRACER_PAIR_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "heaptrace.h"

/* An open-addressing table, ptr -> the open allocation of it, reused run after run (gen: whose entries are live). */
struct pair_entry {
	__u64 ptr;
	__u32 off;              /* the allocation's offset from the run's tail; PAIR_NONE: none open */
	__u32 gen;
};

struct pairing {
	struct pair_entry *e;   /* HT_RING_SLOTS * 2 entries, allocated at the first run */
	__u32 gen;
	uint64_t pairs;         /* pairs marked, for -v */
	uint64_t carried;       /* of them, frees held back by a run whose allocation it consumed */
	bool off;               /* HEAPTRACE_PAIR=0: none marked */
};

/*
 * Marks the pairs among the n published slots from position tail on
 * (heaptrace owns them until tail moves), and clears the marks of every
 * other event there.  Returns how many of the n slots the drain may
 * consume: all, or up to a stack whose frames are not all published
 * (the program stops there too).  A pair is an HT_EV_ALLOC that made a
 * block (ptr, recorded, no arena) and the first later HT_EV_FREE of that
 * ptr, with no allocation of the ptr nor a realloc of it between them.
 * Without memory for the table, no pairs: every slot is unmarked (the
 * live map's way).
 */
__u32 pair_mark(struct pairing *p, struct ht_ev *slots, __u64 tail, __u32 n);

/*
 * The first event's offset at or past want among the m slots pair_mark()
 * took (m at most): a run that consumes only so far ends between events.
 * A run may hold back the last slots it scanned so that more allocations
 * find their frees: a free held back whose allocation is consumed keeps
 * its mark through the next scans (its allocation's block waits for it),
 * so the next run must consume what this one held back before any other
 * ring's run (drain.c gives each ring that holds back a lane of its own).
 */
__u32 pair_boundary(const struct ht_ev *slots, __u64 tail, __u32 m, __u32 want);

void pair_free(struct pairing *p);

#endif
