#ifndef HEAPTRACE_INJECT_PLACE_H
#define HEAPTRACE_INJECT_PLACE_H
/*
 * Where the stub goes (place.c): free address space within a rel32 jump
 * of every function it serves, and which objects' functions one stub can
 * serve at all.
 */
#include <stddef.h>
#include <stdint.h>

struct inject;
struct probe_plan;

#define PLACE_REACH (2000ull << 20)     /* what a rel32 jump reaches, with a margin */
#define JUMPS_SIZE 4096                 /* a page of jumps (inject/jumps.h), placed as the stub is */

/* The longest jump between [at, end) and functions in [lo_fn, hi_fn], either way. */
uint64_t place_farthest(uint64_t at, uint64_t end, uint64_t lo_fn, uint64_t hi_fn);

/* Free space of size bytes in maps (/proc/PID/maps) within reach of [lo_fn, hi_fn], the closest; 0: none. */
uint64_t place_near(const char *maps, uint64_t lo_fn, uint64_t hi_fn, uint64_t size);

/*
 * The functions of in one stub of size bytes can serve, by object in the
 * plan's order, and those of objects beyond its reach a page of jumps can
 * (marked far; the page's place in in->jumps, their span in in->far_lo,
 * far_hi); the others get addr 0 (their uprobes stay), or -1 and why when
 * in->whole.  The stub's functions' span in lo, hi.
 */
int place_reach(struct inject *in, const struct probe_plan *plan, const char *maps, uint64_t size, uint64_t *lo,
		uint64_t *hi, char *why, size_t len);

#endif
