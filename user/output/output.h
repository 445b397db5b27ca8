/* Profile writers, one per format. */
#ifndef HT_OUTPUT_H
#define HT_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"
#include "symbolize/symbolize.h"

enum ht_format { FMT_PPROF, FMT_COLLAPSED, FMT_TOP, FMT_PROTO, FMT_HTML, FMT_SVG, FMT_COUNT };

/* Every writer's shape; sym is NULL for a format that needs no symbols. */
typedef int (*output_fn)(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top);

/* One row per format: everything the rest of heaptrace needs to know about it. */
struct format_info {
	const char *name;       /* -f NAME */
	const char *ext;        /* extension of the files heaptrace names itself (heaptrace.PID.EXT) */
	const char *mime;       /* Content-Type when served over --http */
	bool needs_symbols;     /* names resolved by heaptrace (the legacy text leaves them to readers) */
	output_fn write;
};

const struct format_info *format_info(enum ht_format f);

/*
 * A file heaptrace names from a base (-o FILE, or a prefix of its own) and a
 * tag (a snapshot's 0001, peak, a child's PID), in a format that browsers
 * and image viewers open by its extension (-f html, -f svg): BASE.TAG.EXT,
 * the base's own .EXT left out (report.html -> report.0001.html), so that
 * the file opens as a page or a picture, not as text.  false for the other
 * formats, whose files keep their names (FILE.PID, PREFIX.0001.heap).
 */
bool output_tagged_path(char *buf, size_t len, const char *base, const char *tag, enum ht_format fmt);
int format_parse(const char *s, enum ht_format *f);

/* Write p in a format (symbolizing from p->maps where the format needs names). */
int output_write(FILE *f, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top);

/* The same with a symbolizer the caller keeps (NULL: one for this call). */
int output_write_sym(FILE *f, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top,
		     struct symbolizer *sym);

/* The last output_write's time in symbols (formats that need them), ms: -v's phases. */
extern double output_symbolize_ms;

/*
 * Write p into a new file that replaces path when complete (outfile.h).  0,
 * or -1 with errno set: the caller says which profile was lost.
 */
int output_file(const char *path, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top);

/*
 * A few lines on what grew: the total and the n stacks that grew most, by
 * their innermost named frames (--diff with -i).
 */
/* The innermost frame with a name, for one-line summaries. */
const char *leaf_name(const struct prof_stack *s, struct symbolizer *sym, char *buf, size_t len);
void output_growth(FILE *f, const struct profile *diff, struct symbolizer *sym, enum ht_value v, size_t n);

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
