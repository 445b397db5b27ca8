#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/writers.h"
#include "util/array.h"

struct line {
	char *text;
	int64_t value;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* Append a frame name; ';' separates frames, so one inside a name becomes ':'.  0 or -1. */
static int append(char **buf, size_t *len, size_t *cap, const char *name)
{
	size_t n = strlen(name);

	if (ARRAY_RESERVE(*buf, *cap, *len + n + 2, 256))
		return -1;
	if (*len)
		(*buf)[(*len)++] = ';';
	for (size_t i = 0; i < n; i++)
		(*buf)[(*len)++] = name[i] == ';' ? ':' : name[i];
	(*buf)[*len] = '\0';
	return 0;
}

/* Frames outermost first, inline frames expanded, innermost (allocation site) last. */
static char *stack_text(const struct prof_stack *s, struct symbolizer *sym)
{
	char *buf = NULL, name[256];
	size_t len = 0, cap = 0;
	int err = 0;

	if (!s->depth)
		err |= append(&buf, &len, &cap, "[lost stack]");
	/* Like perf's [unknown]: the walk failed above this frame, the stack is not complete. */
	if (s->flags & HT_STACK_TRUNCATED)
		err |= append(&buf, &len, &cap, "[truncated]");
	for (uint32_t i = s->depth; i-- > 0;) {
		const struct sym_frame *fr;
		int n = sym_lookup(sym, s->pcs[i], true, &fr);

		for (int k = n; k-- > 0;)
			err |= append(&buf, &len, &cap, sym_frame_label(&fr[k], s->pcs[i], name, sizeof(name)));
	}
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

int output_collapsed(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top)
{
	(void)top;
	struct line *lines = calloc(p->n ? p->n : 1, sizeof(*lines));
	size_t n = 0;

	if (!lines)
		return -1;
	for (size_t i = 0; i < p->n; i++) {
		int64_t val = site_value(&p->stacks[i].c, v);
		if (!val)
			continue;
		lines[n].text = stack_text(&p->stacks[i], sym);
		lines[n].value = val;
		if (lines[n].text)
			n++;
	}
	/* Different addresses can name the same frames: one line per name path. */
	qsort(lines, n, sizeof(*lines), cmp_line);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && !strcmp(lines[i].text, lines[i + 1].text)) {
			lines[i + 1].value += lines[i].value;
		} else if (lines[i].value) {
			fprintf(f, "%s %" PRId64 "\n", lines[i].text, lines[i].value);
		}
		free(lines[i].text);
	}
	free(lines);
	return ferror(f) ? -1 : 0;
}
