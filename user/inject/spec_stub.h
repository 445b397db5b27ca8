/*
 * How the in-process stub treats each function it takes, the malloc
 * family's and the others (--sym, --free-sym, --reset-sym, presets): as an
 * allocator, a free or a reset; whether it must be called (not jumped to)
 * to tell apart the traced calls made inside it; and the fast forms of its
 * size and block that every call evaluates.  See docs/fast-path.md,
 * "Custom allocators".
 */
#ifndef HT_SPEC_STUB_H
#define HT_SPEC_STUB_H

#include "heaptrace.h"
#include "stub/stub.h"

struct probe;

/* fn's flags and fast forms for probe p with descriptor s (the rest of fn is the caller's). */
void spec_stub_fill(struct stub_fn *fn, const struct probe *p, const struct ht_alloc_spec *s);

#endif
