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

/*
 * Function i's fast entry into img (the stub's file at base): the undo of
 * p's first instruction, the decision, then the original (fn->orig, by the
 * config's word) or the handler.  bias: p's object's load bias in the
 * process.  0, or -1 if it does not fit.
 */
int fast_emit(uint8_t *img, uint64_t base, int i, const struct stub_fn *fn, const struct probe *p, uint64_t handler,
	      uint64_t bias);

#endif
