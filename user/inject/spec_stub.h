/*
 * Which probes of the plan the in-process stub may take beyond the malloc
 * family (--sym, --free-sym, --reset-sym, presets), and how it treats
 * each: what the stub can evaluate in the target without a trap, and which
 * nesting it must keep.  See docs/fast-path.md, "Custom allocators".
 */
#ifndef HT_SPEC_STUB_H
#define HT_SPEC_STUB_H

#include <stdbool.h>

#include "heaptrace.h"

struct inject;
struct probe;
struct probe_plan;

/* The stub's flags (enum stub_fn_flags) for a probe it takes. */
unsigned spec_stub_flags(const struct probe *p, const struct ht_alloc_spec *s);

/*
 * A redirected allocator that may call other traced functions (not a
 * leaf) is told apart from its nested calls by the stub alone: the BPF
 * side does not see its call.  So while any probe of the plan keeps
 * uprobes, such a function (not of the malloc family, which calls no
 * function of the program) keeps its uprobes too, said at -v.  Returns
 * how many were given back (installing: marked so, for
 * probes_attach_fallback).
 */
int spec_stub_guard(struct inject *in, struct probe_plan *plan, bool installing);

#endif
