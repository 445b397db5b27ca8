/*
 * The writers, one per format, and what they share (leaf.c, losses.c): a
 * header of its own, so that a writer needs nothing of output.c, which
 * picks them (formats[]).  output.h includes it for the other folders.
 */
#ifndef HT_OUTPUT_WRITERS_H
#define HT_OUTPUT_WRITERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "symbolize/symbolize.h"

/* Every writer's shape; sym is NULL for a format that needs no symbols. */
typedef int (*output_fn)(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top);

/* The innermost frame with a name, for one-line summaries. */
const char *leaf_name(const struct prof_stack *s, struct symbolizer *sym, char *buf, size_t len);

/* Legacy gperftools heap profile text; needs no symbols (consumers read MAPPED_LIBRARIES). */
int output_pprof_text(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top);

/*
 * Gzipped pprof protobuf with symbols inside; v is the default sample
 * type (inuse_space for /debug/pprof/heap, alloc_space for allocs).
 */
int output_pprof_proto(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top);

/* Brendan Gregg's folded stacks for flamegraph.pl: "outer;...;inner VALUE". */
int output_collapsed(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top);

/* A human-readable report of totals, losses and the heaviest top stacks. */
int output_top(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top);

/*
 * One self-contained HTML page: summary, the heap over time, flame graphs
 * of every counter, top stacks, size and lifetime histograms.
 */
int output_html(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top);

/* The default --peak-step of -f html: its at-peak view is within this of the exact peak. */
#define HTML_PEAK_STEP 4096

/* Time bins of the live blocks a time range of the html chart lists (profile_source.live_bins). */
#define HTML_LIVE_BINS 200

/* A static flame graph of v, SVG that needs no script. */
int output_svg(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top);

/* A counter's one name (HT_COUNTERS in heaptrace.h), and whether it counts a loss. */
const char *counter_name(enum ht_counter c);
bool counter_is_loss(enum ht_counter c);

/* The loss counters that are non-zero, as "name=N name=N"; "" when none. */
void output_losses(char *buf, size_t len, const uint64_t counters[HT_COUNTER_MAX], bool all);

#endif
