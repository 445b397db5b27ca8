/* Profile writers, one per format. */
#ifndef HT_OUTPUT_H
#define HT_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "output/writers.h"

enum ht_format { FMT_PPROF, FMT_COLLAPSED, FMT_TOP, FMT_PROTO, FMT_HTML, FMT_SVG, FMT_COUNT };

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
/* The same with a symbolizer the caller keeps (NULL: one for this call). */
int output_file_sym(const char *path, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top,
		    struct symbolizer *sym);

/*
 * A few lines on what grew: the total and the n stacks that grew most, by
 * their innermost named frames (--diff with -i).
 */
void output_growth(FILE *f, const struct profile *diff, struct symbolizer *sym, enum ht_value v, size_t n);

#endif
