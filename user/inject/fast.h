#ifndef HT_INJECT_FAST_H
#define HT_INJECT_FAST_H
/*
 * Sampled mode's fast entries (fast.c): for a function whose call is
 * decided by its registers alone (an allocation's size, a free's block),
 * heaptrace writes machine code of its own that decides the common case
 * (not sampled: on to the original) without the handler's frame of saved
 * registers and its call into C: the thread's own countdown (or the
 * GIL's, STUB_FN_GIL) less the size for an allocation, a byte of the
 * filter for a free.  The original's
 * displaced code follows in the entry, relocated, when the function is in
 * a rel32 jump's reach.  A wrapper that forwards (CPython's
 * PyObject_Malloc) goes on to its function's fast entry, as the wrapper
 * would call it.  Anything else goes on to the handler as entry_i would.
 */
#include <stdbool.h>
#include <stdint.h>

#include "stub/stub.h"

struct probe;

_Static_assert(STUB_FAST_COUNTS + 8 <= STUB_GADGET_OFF, "the fast entries overlap the gadget");
_Static_assert(STUB_CFG_OFF + sizeof(struct stub_cfg) <= STUB_FAST_OFF, "the config overlaps the fast entries");

/* Whether fn (its stub_fn filled) gets a fast entry in a session of sample_rate. */
bool fast_eligible(const struct stub_fn *fn, uint64_t sample_rate);

/* Where function i's fast entry is made for. */
struct fast_at {
	uint64_t base;          /* the stub's */
	uint64_t handler;       /* the entry entry_i jumps to */
	uint64_t bias;          /* the load bias of the function's object */
	uint64_t jump;          /* a forwarding wrapper's slot redirected: the jump it holds (0: none) */
	/*
	 * The function's first bytes (at addr, skip and displaced as its
	 * patch has them), relocated into the entry as orig_i has them; NULL:
	 * beyond a rel32 jump (the page of jumps): orig_i by its address.
	 */
	const uint8_t *code;
	size_t code_len, skip, displaced;
	uint64_t addr, func_size;
	uint64_t impl_entry;    /* a forwarding wrapper: its function's fast entry, past the undo (0: none) */
	uint32_t granule;       /* stub_cfg's granule_shift */
};

/* Where function i's fast entry starts; a wrapper's forward goes undo bytes in. */
static inline uint64_t fast_entry_at(uint64_t base, int i)
{
	return base + STUB_FAST_OFF + (uint64_t)i * STUB_FAST_SIZE;
}

/*
 * Function i's fast entry into img (the stub's file at at->base): the undo
 * of p's first instruction, the decision, then the original (fn->orig, by
 * the config's word) or the handler.  0, or -1 if it has none (it does not
 * fit, or a wrapper has nothing it may forward on).
 */
int fast_emit(uint8_t *img, int i, const struct stub_fn *fn, const struct probe *p, const struct fast_at *at);

/* The code a realloc's fast entry returns through (STUB_FAST_EXIT) into img, for a stub at base.  0, or -1. */
int fast_exit_emit(uint8_t *img, uint64_t base);

#endif
