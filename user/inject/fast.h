#ifndef HT_INJECT_FAST_H
#define HT_INJECT_FAST_H
/*
 * Sampled mode's fast entries (fast.c): for a function whose call is
 * decided by one register alone (an allocation's size, a free's block),
 * heaptrace writes machine code of its own that decides the common case
 * (not sampled: straight to the original) without the handler's frame of
 * saved registers and its call into C: the countdown's atomic subtraction
 * for an allocation, a byte of the filter for a free.  Anything else goes
 * on to the handler as entry_i would.
 */
#include <stdbool.h>
#include <stdint.h>

#include "stub/stub.h"

struct probe;

_Static_assert(STUB_FAST_HASH_K + 8 <= STUB_GADGET_OFF, "the fast entries overlap the gadget");
_Static_assert(STUB_CFG_OFF + sizeof(struct stub_cfg) <= STUB_FAST_OFF, "the config overlaps the fast entries");

/* Whether fn (its stub_fn filled) gets a fast entry in a session of sample_rate. */
bool fast_eligible(const struct stub_fn *fn, uint64_t sample_rate);

/* Where function i's fast entry is made for. */
struct fast_at {
	uint64_t base;          /* the stub's */
	uint64_t handler;       /* the entry entry_i jumps to */
	uint64_t bias;          /* the load bias of the function's object */
	uint64_t jump;          /* a forwarding wrapper's slot redirected: the jump it holds (0: none) */
};

/*
 * Function i's fast entry into img (the stub's file at at->base): the undo
 * of p's first instruction, the decision, then the original (fn->orig, by
 * the config's word) or the handler.  0, or -1 if it has none (it does not
 * fit, or a wrapper has nothing it may forward on).
 */
int fast_emit(uint8_t *img, int i, const struct stub_fn *fn, const struct probe *p, const struct fast_at *at);

#endif
