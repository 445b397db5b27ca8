/*
 * What the in-process stub (stub/) can evaluate of a spec in the target,
 * without BPF's safe reads of memory: planning asks it of every function
 * beyond the malloc family (--sym, --free-sym, --reset-sym, presets).
 */
#ifndef HT_STUB_SPEC_H
#define HT_STUB_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "heaptrace.h"

/*
 * Can the stub evaluate this spec as the BPF side would?  Its size and
 * block must be sums of products of arguments, numbers, the return value
 * and globals of the function's object (read in the target, where they
 * cannot fault); a read through an argument (*(arg1-8)) or at the return
 * (*(ret-8)) of the size or block needs BPF's safe reads.  false: why.
 */
bool spec_stub_ok(const struct ht_alloc_spec *s, char *why, size_t len);

#endif
