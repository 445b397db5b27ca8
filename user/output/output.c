#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "output.h"

int format_parse(const char *s, enum ht_format *f)
{
	static const char *const names[] = { [FMT_PPROF] = "pprof", [FMT_COLLAPSED] = "collapsed",
					     [FMT_TOP] = "top", [FMT_PROTO] = "proto" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*f = i;
			return 0;
		}
	return -1;
}

int output_write(FILE *f, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top)
{
	return output_write_sym(f, fmt, p, v, top, NULL);
}

int output_write_sym(FILE *f, enum ht_format fmt, const struct profile *p, enum ht_value v, size_t top,
		     struct symbolizer *given)
{
	struct symbolizer *sym = given;
	int err;

	if (fmt != FMT_PPROF && !sym) {
		sym = sym_open(p->maps ? p->maps : "");
		if (!sym) {
			ht_err("cannot read the profile's memory map for symbols: %s", strerror(errno));
			return -1;
		}
	}
	switch (fmt) {
	case FMT_PPROF:
		err = output_pprof_text(f, p);
		break;
	case FMT_COLLAPSED:
		err = output_collapsed(f, p, sym, v);
		break;
	case FMT_PROTO:
		err = output_pprof_proto(f, p, sym, v);
		break;
	default:
		err = output_top(f, p, sym, v, top);
		break;
	}
	if (sym && sym != given)
		sym_close(sym);
	return fflush(f) || err ? -1 : 0;
}

/* The innermost frame with a name, for one-line summaries. */
static const char *leaf_name(const struct prof_stack *s, struct symbolizer *sym, char *buf, size_t len)
{
	const struct sym_frame *fr;

	if (!s->depth)
		return "[lost stack]";
	/* sym_lookup always yields a frame; the first is the innermost. */
	sym_lookup(sym, s->pcs[0], true, &fr);
	return sym_frame_name(&fr[0], s->pcs[0], buf, len);
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
