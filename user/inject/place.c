/*
 * Where the stub goes: within a rel32 jump of every function it serves
 * (its trampolines jump back, the functions' patches jump to it), in the
 * free gap of the process's map closest to them.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "inject/state.h"
#include "inject/place.h"
#include "probe/plan.h"
#include "util/log.h"
#include "util/procfs.h"

/* The longest jump between [at, end) and functions in [lo_fn, hi_fn], either way. */
uint64_t place_farthest(uint64_t at, uint64_t end, uint64_t lo_fn, uint64_t hi_fn)
{
	uint64_t up = hi_fn > at ? hi_fn - at : 0, down = end > lo_fn ? end - lo_fn : 0;

	return up > down ? up : down;
}

/*
 * Free address space for the stub within a rel32 jump of every function:
 * the gap closest to them.  0 when there is none.
 */
uint64_t place_near(const char *maps, uint64_t lo_fn, uint64_t hi_fn, uint64_t size)
{
	uint64_t prev_end = 0x10000, best = 0, best_dist = UINT64_MAX;
	struct map_entry e;

	for (const char *pos = maps;; prev_end = e.hi) {
		bool more = maps_next(&pos, &e);
		uint64_t gap_lo = (prev_end + 0xffff) & ~0xffffull, gap_hi = more ? e.lo : 0x7ffffffff000ull;

		if (gap_hi > gap_lo && gap_hi - gap_lo >= size + 0x20000) {
			/* Keep a guard gap on both sides: stacks grow, heaps grow up. */
			uint64_t at = gap_hi <= lo_fn ? gap_hi - size - 0x10000 : gap_lo + 0x10000;
			/* The functions may lie in several objects, with this gap between them. */
			uint64_t far = place_farthest(at, at + size, lo_fn, hi_fn);
			if (far < PLACE_REACH && far < best_dist) {
				best = at;
				best_dist = far;
			}
		}
		if (!more)
			break;
	}
	return best;
}

static bool same_object(const struct probe_plan *plan, const struct inject_fn *a, const struct inject_fn *b)
{
	return !strcmp(plan->probes[a->probe].path, plan->probes[b->probe].path);
}

/* How many functions of fns[i]'s object the stub would serve. */
static int object_fns(const struct inject *in, const struct probe_plan *plan, int i)
{
	int n = 0;

	for (int j = 0; j < in->n; j++)
		n += in->fns[j].addr && same_object(plan, &in->fns[i], &in->fns[j]);
	return n;
}

/*
 * One stub within a rel32 jump of every function it serves: the objects
 * with the most functions first (of as many, in the plan's order: the
 * allocator's first), each one taken when a place exists near its
 * functions and those of every object taken before.  An object out of the
 * stub's reach goes through a page of jumps near it (inject/jumps.h), with
 * the other far objects that page can reach: where a non-PIE program lies
 * more than 2 GiB from libc (Debian's python3.11 at 0x400000), --preset
 * python's twelve functions of the interpreter's allocator take the stub
 * and libc's nine the page.  Before the page, libc's kept their uprobes
 * and the process's calls of them went one by one through the record
 * sites (3.2 s for a loop of 1.7 million allocations that ran 0.17 s
 * bare).  Functions neither reaches get addr 0 (they keep their uprobes);
 * an adopted process takes all or none (-1, why).  The span of what the
 * stub serves goes in lo, hi; the page's in in->far_lo, far_hi, and where
 * it goes in in->jumps (0: no page).
 */
int place_reach(struct inject *in, const struct probe_plan *plan, const char *maps, uint64_t size, uint64_t *lo,
		 uint64_t *hi, char *why, size_t len)
{
	const char *taken = NULL, *far = NULL;
	int order[STUB_MAX_FNS], count[STUB_MAX_FNS], n = 0;

	/* The first function of each object, the objects with more functions first (a stable insertion sort). */
	for (int i = 0; i < in->n; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = in->fns[j].addr && same_object(plan, &in->fns[i], &in->fns[j]);
		if (seen || !in->fns[i].addr)
			continue;
		int k = n++, c = object_fns(in, plan, i);
		while (k > 0 && count[k - 1] < c) {
			order[k] = order[k - 1];
			count[k] = count[k - 1];
			k--;
		}
		order[k] = i;
		count[k] = c;
	}
	*lo = UINT64_MAX, *hi = 0;
	in->far_lo = UINT64_MAX, in->far_hi = 0;
	in->jumps = 0;
	for (int oi = 0; oi < n; oi++) {
		int i = order[oi];
		uint64_t olo = UINT64_MAX, ohi = 0;

		for (int j = i; j < in->n; j++)
			if (in->fns[j].addr && same_object(plan, &in->fns[i], &in->fns[j])) {
				olo = in->fns[j].addr < olo ? in->fns[j].addr : olo;
				ohi = in->fns[j].addr > ohi ? in->fns[j].addr : ohi;
			}
		uint64_t nlo = olo < *lo ? olo : *lo, nhi = ohi > *hi ? ohi : *hi;
		uint64_t flo = olo < in->far_lo ? olo : in->far_lo, fhi = ohi > in->far_hi ? ohi : in->far_hi;
		const char *obj = plan->probes[in->fns[i].probe].path;
		bool here = !taken || place_near(maps, nlo, nhi, size);
		uint64_t page = here ? 0 : place_near(maps, flo, fhi, JUMPS_SIZE);
		if (here || page) {
			for (int j = i; j < in->n; j++)
				if (in->fns[j].addr && same_object(plan, &in->fns[i], &in->fns[j]))
					in->fns[j].far = !here;
			if (here) {
				*lo = nlo, *hi = nhi;
				taken = taken ? taken : obj;
			} else {
				in->far_lo = flo, in->far_hi = fhi;
				in->jumps = page;
				ht_info("fast path: the functions of %s are beyond one stub's reach with %s's: through a "
					"page of jumps near them", obj, taken);
				far = far ? far : obj;
			}
			continue;
		}
		if (in->whole) {
			snprintf(why, len, "no room for one stub within 2 GiB of both %s and %s, nor for a page of jumps "
				 "near %s and %s", taken, obj, far ? far : obj, obj);
			return -1;
		}
		for (int j = i; j < in->n; j++)
			if (in->fns[j].addr && same_object(plan, &in->fns[i], &in->fns[j])) {
				ht_info("fast path: %s in %s keeps its uprobes: no room for one stub within 2 GiB of it and of "
					"%s, nor for a page of jumps near it%s%s", plan->probes[in->fns[j].probe].func, obj,
					taken, far ? " and " : "", far ? far : "");
				in->fns[j].addr = 0;
			}
	}
	return 0;
}
