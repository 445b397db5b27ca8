#ifndef HT_INJECT_JUMPS_H
#define HT_INJECT_JUMPS_H
/*
 * A page of jumps (jumps.c) for the functions one stub cannot reach with a
 * rel32 jump: a non-PIE program at 0x400000 lies more than 2 GiB from the
 * libraries (Debian's python3.11 from libc).  The page goes near them; each
 * function's patch jumps to its slot, which jumps on to the stub's entry_i
 * through an absolute address, and holds its displaced prologue (orig_i,
 * relocated where it can still reach what it addresses).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject/place.h"
#include "inject/state.h"

struct probe_plan;
struct remote;

#define JUMPS_SLOT STUB_TRAMP_SIZE      /* per function: the jump on (16 bytes), then orig_i */
_Static_assert(STUB_MAX_FNS * JUMPS_SLOT <= JUMPS_SIZE, "the page of jumps holds every function");

/* Function i's slot in the target: where its patch jumps. */
static inline uint64_t jumps_slot(const struct inject *in, int i)
{
	return in->jumps + (uint64_t)i * JUMPS_SLOT;
}

/*
 * The page's bytes for in->jumps (chosen, the stub's base too): each far
 * function's slot.  0, or -1 and why.
 */
int jumps_build(const struct inject *in, const struct probe_plan *plan, uint8_t *page, char *why, size_t len);

/*
 * The page into the target at in->jumps (a memfd of its own, mapped
 * private and executable, as the stub's file is), through the stub's
 * gadget.  0, or -1 and why (in->jumps is 0 then: the far functions keep
 * their uprobes).
 */
int jumps_map(struct inject *in, struct remote *r, const uint8_t *page, char *why, size_t len);

/*
 * An earlier session's page (a stub of in->base used again), byte for byte
 * what this one would build at its place: true, in->jumps is it.  false:
 * none, in->jumps as it was.
 */
bool jumps_reuse(struct inject *in, struct remote *r, const struct probe_plan *plan, const char *maps);

#endif
