/*
 * How the in-process stub treats each function it takes, the malloc
 * family's and the others (--sym, --free-sym, --reset-sym, presets): as an
 * allocator, a free or a reset, and whether it must be called (not jumped
 * to) to tell apart the traced calls made inside it.  See
 * docs/fast-path.md, "Custom allocators".
 */
#ifndef HT_SPEC_STUB_H
#define HT_SPEC_STUB_H

#include "heaptrace.h"

struct probe;

/* The stub's flags (enum stub_fn_flags) for a probe it takes. */
unsigned spec_stub_flags(const struct probe *p, const struct ht_alloc_spec *s);

#endif
