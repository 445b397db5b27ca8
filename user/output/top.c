#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

/* 1234567 -> "1,234,567": byte counts are read by people here. */
static const char *grouped(int64_t v, char *buf, size_t len)
{
	char digits[32];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, (uint64_t)(v < 0 ? -v : v));
	size_t o = 0;

	if (v < 0 && o + 1 < len)
		buf[o++] = '-';
	for (int i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

static const char *unit(enum ht_value v)
{
	return v == V_INUSE_SPACE || v == V_ALLOC_SPACE ? "bytes" : "objects";
}

static void print_frames(FILE *f, const struct prof_stack *s, struct symbolizer *sym)
{
	char name[256];

	if (!s->depth)
		fputs("        [lost stack: the stack map could not hold it]\n", f);
	for (uint32_t i = 0; i < s->depth; i++) {
		const struct sym_frame *fr;
		int n = sym_lookup(sym, s->pcs[i], true, &fr);

		for (int k = 0; k < n; k++) {
			fprintf(f, "        %s%s", k ? "(inlined) " : "",
				sym_frame_name(&fr[k], s->pcs[i], name, sizeof(name)));
			if (fr[k].file)
				fprintf(f, "  %s:%d", fr[k].file, fr[k].line);
			else if (fr[k].module && fr[k].func)
				fprintf(f, "  (%s)", fr[k].module);
			fputc('\n', f);
		}
	}
}

int output_top(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v,
	       size_t max_stacks)
{
	size_t *order = profile_order(p, v);
	int64_t total = site_value(&p->total, v);
	char a[32], b[32], c[32], d[32], losses[1024];

	if (!order)
		return -1;
	fprintf(f, "heaptrace: PID %d, stacks by %s\n", p->pid, value_name(v));
	fprintf(f, "  in use:    %14s bytes in %s objects\n", grouped(p->total.inuse_bytes, a, sizeof(a)),
		grouped(p->total.inuse_objects, b, sizeof(b)));
	fprintf(f, "  allocated: %14s bytes in %s objects\n", grouped(p->total.alloc_bytes, c, sizeof(c)),
		grouped(p->total.alloc_objects, d, sizeof(d)));
	fprintf(f, "  stacks:    %14zu\n", p->n);
	output_losses(losses, sizeof(losses), p->counters, false);
	fprintf(f, "  losses:    %s\n\n", *losses ? losses : "none");

	size_t shown = 0;
	for (size_t k = 0; k < p->n && shown < max_stacks; k++) {
		const struct prof_stack *s = &p->stacks[order[k]];
		int64_t val = site_value(&s->c, v);

		if (!val)
			break;
		shown++;
		fprintf(f, "#%-3zu %s %s (%.1f%%)   in use %s B / %" PRId64 " obj, allocated %s B / %" PRIu64 " obj\n",
			shown, grouped(val, a, sizeof(a)), unit(v), total ? 100.0 * val / total : 0.0,
			grouped(s->c.inuse_bytes, b, sizeof(b)), (int64_t)s->c.inuse_objects,
			grouped(s->c.alloc_bytes, c, sizeof(c)), (uint64_t)s->c.alloc_objects);
		print_frames(f, s, sym);
		fputc('\n', f);
	}
	if (!shown)
		fprintf(f, "no stack has any %s\n", value_name(v));
	free(order);
	return ferror(f) ? -1 : 0;
}
