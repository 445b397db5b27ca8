/* Profile writers, one per format. */
#ifndef HT_OUTPUT_H
#define HT_OUTPUT_H

#include <stdio.h>

#include "profile.h"
#include "symbolize.h"

enum ht_format { FMT_PPROF, FMT_COLLAPSED, FMT_TOP, FMT_PROTO };

int format_parse(const char *s, enum ht_format *f);

/* Write p in a format (symbolizing from p->maps where the format needs names). */
int output_write(FILE *f, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top);

/* The same with a symbolizer the caller keeps (NULL: one for this call). */
int output_write_sym(FILE *f, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top,
		     struct symbolizer *sym);

/*
 * A few lines on what grew: the total and the n stacks that grew most, by
 * their innermost named frames (--diff with -i).
 */
void output_growth(FILE *f, const struct profile *diff, struct symbolizer *sym, enum ht_value v, size_t n);

/* Legacy gperftools heap profile text; needs no symbols (consumers read MAPPED_LIBRARIES). */
int output_pprof_text(FILE *f, const struct profile *p);

/*
 * Gzipped pprof protobuf with symbols inside; dflt is the default sample
 * type (inuse_space for /debug/pprof/heap, alloc_space for allocs).
 */
int output_pprof_proto(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value dflt);

/* Brendan Gregg's folded stacks for flamegraph.pl: "outer;...;inner VALUE". */
int output_collapsed(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v);

/* A human-readable report of totals, losses and the heaviest stacks. */
int output_top(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v,
	       size_t max_stacks);

/* The loss counters that are non-zero, as "name=N name=N"; "" when none. */
void output_losses(char *buf, size_t len, const uint64_t counters[HT_COUNTER_MAX], bool all);

#endif
