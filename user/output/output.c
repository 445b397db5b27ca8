#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "output/output.h"
#include "output/outfile.h"

static const struct format_info formats[FMT_COUNT] = {
	[FMT_PPROF] = { "pprof", "heap", "text/plain; charset=utf-8", false, output_pprof_text },
	[FMT_COLLAPSED] = { "collapsed", "collapsed", "text/plain; charset=utf-8", true, output_collapsed },
	[FMT_TOP] = { "top", "top", "text/plain; charset=utf-8", true, output_top },
	[FMT_PROTO] = { "proto", "pb.gz", "application/octet-stream", true, output_pprof_proto },
	[FMT_HTML] = { "html", "html", "text/html; charset=utf-8", true, output_html },
	[FMT_SVG] = { "svg", "svg", "image/svg+xml", true, output_svg },
};

const struct format_info *format_info(enum ht_format f)
{
	return &formats[f < FMT_COUNT ? f : FMT_PPROF];
}

bool output_tagged_path(char *buf, size_t len, const char *base, const char *tag, enum ht_format fmt)
{
	if (fmt != FMT_HTML && fmt != FMT_SVG)
		return false;
	const char *ext = format_info(fmt)->ext;
	size_t n = strlen(base), e = strlen(ext);
	if (n > e + 1 && base[n - e - 1] == '.' && !strcmp(base + n - e, ext) && base[n - e - 2] != '/')
		n -= e + 1;
	snprintf(buf, len, "%.*s.%s.%s", (int)n, base, tag, ext);
	return true;
}

int format_parse(const char *s, enum ht_format *f)
{
	for (int i = 0; i < FMT_COUNT; i++)
		if (!strcmp(s, formats[i].name)) {
			*f = i;
			return 0;
		}
	return -1;
}

int output_write(FILE *f, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top)
{
	return output_write_sym(f, fmt, p, v, top, NULL);
}

double output_symbolize_ms;

int output_write_sym(FILE *f, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top,
		     struct symbolizer *given)
{
	/*
	 * --merge: stacks are per process (pid) so that -f proto can label
	 * them; every other format shows the tree, the same frames as one.
	 */
	bool labelled = false;
	for (size_t i = 0; i < p->n && !labelled; i++)
		labelled = p->stacks[i].pid != 0;
	if (labelled && fmt != FMT_PROTO) {
		struct profile u;
		if (profile_unlabel(p, &u))
			return -1;
		int err = output_write_sym(f, fmt, &u, v, top, given);
		profile_free(&u);
		return err;
	}
	const struct format_info *fi = format_info(fmt);
	struct symbolizer *sym = fi->needs_symbols ? given : NULL;
	double busy0;
	int err;

	output_symbolize_ms = 0;
	if (fi->needs_symbols && !sym) {
		sym = sym_open(p->maps ? p->maps : "");
		if (!sym) {
			ht_err("cannot read the profile's memory map for symbols: %s", strerror(errno));
			return -1;
		}
	}
	/*
	 * Frames are symbolized as the writer asks for them (-f top: only the
	 * stacks it prints); the time is the symbolizer's own, counted by it.
	 */
	busy0 = sym_busy_ms(sym);
	err = fi->write(f, p, sym, v, top);
	output_symbolize_ms = sym_busy_ms(sym) - busy0;
	if (sym && sym != given)
		sym_close(sym);
	return fflush(f) || err ? -1 : 0;
}

int output_file(const char *path, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top)
{
	return output_file_sym(path, fmt, p, v, top, NULL);
}

int output_file_sym(const char *path, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top,
		    struct symbolizer *sym)
{
	struct outfile of;
	FILE *f = outfile_begin(&of, path);
	int saved;

	if (!f)
		return -1;
	if (output_write_sym(f, fmt, p, v, top, sym)) {
		saved = errno;
		outfile_abort(&of);
		errno = saved;
		return -1;
	}
	return outfile_commit(&of);
}

void output_growth(FILE *f, const struct profile *diff, struct symbolizer *sym, enum ht_value v, size_t n)
{
	size_t *order = profile_order(diff, v);
	char name[256];

	fprintf(f, "heaptrace: growth %+" PRId64 " %s since the last snapshot\n", site_value(&diff->total, v),
		value_name(v));
	for (size_t k = 0; order && k < diff->n && k < n; k++) {
		const struct prof_stack *s = &diff->stacks[order[k]];
		int64_t val = site_value(&s->c, v);
		if (val <= 0)
			break;
		fprintf(f, "heaptrace:   %+" PRId64 "  %s\n", val, leaf_name(s, sym, name, sizeof(name)));
	}
	free(order);
}
