/* Profile writers, one per format. */
#ifndef HT_OUTPUT_H
#define HT_OUTPUT_H

#include <stdio.h>

#include "profile.h"
#include "symbolize.h"

/* Legacy gperftools heap profile text; needs no symbols (consumers read MAPPED_LIBRARIES). */
int output_pprof_text(FILE *f, const struct profile *p);

/* Brendan Gregg's folded stacks for flamegraph.pl: "outer;...;inner VALUE". */
int output_collapsed(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v);

/* A human-readable report of totals, losses and the heaviest stacks. */
int output_top(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v,
	       size_t max_stacks);

/* The loss counters that are non-zero, as "name=N name=N"; "" when none. */
void output_losses(char *buf, size_t len, const uint64_t counters[HT_COUNTER_MAX], bool all);

#endif
