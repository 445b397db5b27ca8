/* A stack in a word, for the one-line summaries of growth (output.c, growth.c) and the html page's lists. */
#include "output/writers.h"

/* The innermost frame with a name, for one-line summaries. */
const char *leaf_name(const struct prof_stack *s, struct symbolizer *sym, char *buf, size_t len)
{
	const struct sym_frame *fr;

	if (!s->depth)
		return "[lost stack]";
	/* sym_lookup always yields a frame; the first is the innermost. */
	sym_lookup(sym, s->pcs[0], true, &fr);
	return sym_frame_name(&fr[0], s->pcs[0], buf, len);
}
