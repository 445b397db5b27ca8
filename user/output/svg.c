/*
 * -f svg: a static flame graph of --value, drawn like flamegraph.pl's
 * (root at the bottom, children in name order, one tooltip per frame),
 * with no script: it shows as it is in a README, a CI artifact or an
 * image viewer.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/flame.h"
#include "output/writers.h"

#define WIDTH 1200
#define FRAME_H 16
#define PAD_TOP 40
#define PAD_SIDE 10
#define PAD_BOTTOM 10
#define MIN_WIDTH 0.3          /* px: narrower frames are left out, as flamegraph.pl's --minwidth */
#define CHAR_W 6.6             /* px per character of the 11px monospace labels */

static int xml_esc(FILE *f, unsigned char c)
{
	const char *e = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '"' ? "&quot;" : NULL;

	if (e)
		fputs(e, f);
	return e != NULL;
}

static void put_xml(FILE *f, const char *s)
{
	flame_put_text(f, s, xml_esc);
}

struct layout {
	const struct flame *fl;
	const int64_t *val;
	uint32_t *first, *next;         /* children lists, in name order */
	double scale;                   /* px per unit */
	int max_depth, height;
	int64_t total;
	enum ht_value v;
};

static int cmp_child(const void *a, const void *b, void *arg)
{
	const struct flame *fl = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(fl->frames[fl->nodes[x].frame].name, fl->frames[fl->nodes[y].frame].name);

	return c ? c : x < y ? -1 : 1;
}

/* Children lists in name order, so the same stacks always draw the same picture. */
static int children(struct layout *l)
{
	const struct flame *fl = l->fl;
	uint32_t *order = malloc(fl->n_nodes * sizeof(*order));

	l->first = malloc(fl->n_nodes * sizeof(*l->first));
	l->next = malloc(fl->n_nodes * sizeof(*l->next));
	if (!order || !l->first || !l->next) {
		free(order);
		return -1;
	}
	for (size_t i = 0; i < fl->n_nodes; i++) {
		order[i] = i;
		l->first[i] = l->next[i] = FLAME_NONE;
	}
	qsort_r(order + 1, fl->n_nodes - 1, sizeof(*order), cmp_child, (void *)fl);
	/* Prepending in reverse name order leaves each list in name order. */
	for (size_t k = fl->n_nodes; k-- > 1;) {
		uint32_t i = order[k], p = fl->nodes[i].parent;
		l->next[i] = l->first[p];
		l->first[p] = i;
	}
	free(order);
	return 0;
}

static int depth_of(const struct layout *l, uint32_t node, int d)
{
	int deepest = d;

	for (uint32_t c = l->first[node]; c != FLAME_NONE; c = l->next[c])
		if (l->val[c] > 0 && l->val[c] * l->scale >= MIN_WIDTH) {
			int k = depth_of(l, c, d + 1);
			if (k > deepest)
				deepest = k;
		}
	return deepest;
}

/* flamegraph.pl's warm palette, from the name so a function keeps its colour. */
static void colour(const char *name, char *buf, size_t len)
{
	uint32_t h = 2166136261u;

	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	snprintf(buf, len, "rgb(%u,%u,%u)", 205 + h % 50, (h >> 8) % 230, (h >> 16) % 55);
}

static const char *unit(enum ht_value v)
{
	return v == V_INUSE_SPACE || v == V_ALLOC_SPACE || v == V_REALLOC_SPACE ? "bytes" : "objects";
}

static void frame(FILE *f, const struct layout *l, uint32_t node, double x, int depth)
{
	const struct flame_frame *fr = &l->fl->frames[l->fl->nodes[node].frame];
	double w = l->val[node] * l->scale, y = l->height - PAD_BOTTOM - (depth + 1) * FRAME_H;
	char site[512], fill[32];

	colour(fr->name, fill, sizeof(fill));
	fputs("<g><title>", f);
	put_xml(f, fr->name);
	if (*flame_site(fr, site, sizeof(site))) {
		fputs(" ", f);
		put_xml(f, site);
	}
	fprintf(f, " (%" PRId64 " %s, %.2f%%)</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
		l->val[node], unit(l->v), 100.0 * l->val[node] / l->total, x, (int)y, w, FRAME_H - 1, fill);
	size_t fit = (size_t)((w - 6) / CHAR_W), len = strlen(fr->name);
	if (fit >= 3) {
		char label[256];
		/* Cut to the box, on a character boundary of the UTF-8 name. */
		size_t n = len <= fit ? len : fit - 2;
		if (n >= sizeof(label) - 3)
			n = sizeof(label) - 3;
		while (n && (fr->name[n] & 0xc0) == 0x80)
			n--;
		snprintf(label, sizeof(label), "%.*s%s", (int)n, fr->name, n < len ? ".." : "");
		fprintf(f, "<text x=\"%.1f\" y=\"%d\">", x + 3, (int)y + FRAME_H - 5);
		put_xml(f, label);
		fputs("</text>", f);
	}
	fputs("</g>\n", f);
	for (uint32_t c = l->first[node]; c != FLAME_NONE; c = l->next[c]) {
		if (l->val[c] <= 0)
			continue;
		if (l->val[c] * l->scale >= MIN_WIDTH)
			frame(f, l, c, x, depth + 1);
		x += l->val[c] * l->scale;
	}
}

int output_svg(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top)
{
	(void)top;
	struct flame fl;
	struct layout l = { .fl = &fl, .v = v };
	int64_t *vals = NULL, *sums = NULL;
	int err = -1;

	if (flame_build(&fl, p, sym))
		return -1;
	vals = malloc((p->n ? p->n : 1) * sizeof(*vals));
	sums = malloc(fl.n_nodes * sizeof(*sums));
	if (!vals || !sums || children(&l))
		goto out;
	for (size_t i = 0; i < p->n; i++)
		vals[i] = site_value(&p->stacks[i].c, v);
	flame_sums(&fl, p, vals, sums);
	/* A diff's negative stacks have no width: the root is what is drawn. */
	for (uint32_t c = l.first[FLAME_ROOT]; c != FLAME_NONE; c = l.next[c])
		l.total += sums[c] > 0 ? sums[c] : 0;
	l.val = sums;
	l.scale = l.total > 0 ? (double)(WIDTH - 2 * PAD_SIDE) / l.total : 0;
	l.max_depth = l.total > 0 ? depth_of(&l, FLAME_ROOT, 0) : 0;
	l.height = PAD_TOP + (l.max_depth + 1) * FRAME_H + PAD_BOTTOM;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
		   "viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"11\">\n"
		   "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n",
		WIDTH, l.height, WIDTH, l.height);
	fputs("<text x=\"600\" y=\"18\" text-anchor=\"middle\" font-size=\"15\">heaptrace: ", f);
	put_xml(f, p->is_diff ? "growth" : p->name ? p->name : p->command ? p->command : "");
	fprintf(f, "</text>\n<text x=\"600\" y=\"33\" text-anchor=\"middle\" fill=\"#555\">%s, %" PRId64 " %s in %zu stacks%s</text>\n",
		value_name(v), l.total, unit(v), p->n, p->sample_rate ? " (estimates from samples)" : "");
	if (l.total > 0) {
		double x = PAD_SIDE;
		/* The root ("all") is the bottom row, as in flamegraph.pl. */
		fprintf(f, "<g><title>all (%" PRId64 " %s, 100%%)</title><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			   "fill=\"rgb(220,220,220)\" rx=\"2\"/><text x=\"%d\" y=\"%d\">all</text></g>\n",
			l.total, unit(v), PAD_SIDE, l.height - PAD_BOTTOM - FRAME_H, WIDTH - 2 * PAD_SIDE, FRAME_H - 1,
			PAD_SIDE + 3, l.height - PAD_BOTTOM - 5);
		for (uint32_t c = l.first[FLAME_ROOT]; c != FLAME_NONE; c = l.next[c]) {
			if (sums[c] <= 0)
				continue;
			if (sums[c] * l.scale >= MIN_WIDTH)
				frame(f, &l, c, x, 1);
			x += sums[c] * l.scale;
		}
	} else {
		fprintf(f, "<text x=\"600\" y=\"%d\" text-anchor=\"middle\">no stack has any %s</text>\n",
			l.height - PAD_BOTTOM - 4, value_name(v));
	}
	fputs("</svg>\n", f);
	err = ferror(f) ? -1 : 0;
out:
	free(vals);
	free(sums);
	free(l.first);
	free(l.next);
	flame_free(&fl);
	return err;
}
