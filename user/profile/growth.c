#include <stdlib.h>
#include <string.h>

#include "profile/growth.h"

enum growth_class growth_classify(const int64_t *v, size_t n, int64_t *rise)
{
	*rise = 0;
	if (n < GROWTH_K)
		return GROWTH_NEW;
	const int64_t *w = v + n - GROWTH_K;
	*rise = w[GROWTH_K - 1] - w[0];
	for (size_t i = 1; i < GROWTH_K; i++)
		if (w[i] < w[i - 1])
			return GROWTH_BOUNDED;
	/*
	 * Flat in the last two steps: it levelled off, whatever it did
	 * before.  One flat step is not enough: the final snapshot comes
	 * right after the last periodic one, too soon for a leak to show.
	 */
	return w[GROWTH_K - 1] > w[GROWTH_K - 3] ? GROWTH_GROWING : GROWTH_BOUNDED;
}

const char *growth_class_name(enum growth_class c)
{
	return c == GROWTH_GROWING ? "growing" : c == GROWTH_BOUNDED ? "bounded" : "new";
}

/* One stack of one profile, for grouping equal stacks across the series. */
struct item {
	const struct prof_stack *s;
	size_t idx;
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = cmp_frames(x->s, y->s);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int rank(enum growth_class c)
{
	return c == GROWTH_GROWING ? 0 : c == GROWTH_BOUNDED ? 1 : 2;
}

static int cmp_row(const void *a, const void *b)
{
	const struct growth_row *x = a, *y = b;
	if (rank(x->cls) != rank(y->cls))
		return rank(x->cls) - rank(y->cls);
	return (x->slope < y->slope) - (x->slope > y->slope);
}

int growth_series(const struct profile *ps, size_t n, const double *secs, struct growth *g)
{
	size_t total = 0, k = 0;

	memset(g, 0, sizeof(*g));
	g->n_profiles = n;
	if (secs && (g->t = malloc(n * sizeof(double))))
		memcpy(g->t, secs, n * sizeof(double));
	for (size_t i = 0; i < n; i++)
		total += ps[i].n;
	struct item *it = calloc(total + 1, sizeof(*it));
	g->rows = calloc(total + 1, sizeof(*g->rows));
	if (!it || !g->rows) {
		free(it);
		growth_free(g);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < ps[i].n; j++)
			it[k++] = (struct item){ &ps[i].stacks[j], i };
	qsort(it, total, sizeof(*it), cmp_item);
	for (size_t a = 0; a < total;) {
		size_t b = a;
		struct growth_row *r = &g->rows[g->n];
		if (!(r->inuse = calloc(n, sizeof(int64_t)))) {
			free(it);
			growth_free(g);
			return -1;
		}
		g->n++;
		for (; b < total && !cmp_frames(it[a].s, it[b].s); b++) {
			r->inuse[it[b].idx] += it[b].s->c.inuse_bytes;
			r->s = it[b].s;
		}
		/* Judged from its first profile on: a stack that came late is new until it has GROWTH_K. */
		size_t from = it[a].idx;
		r->cls = growth_classify(r->inuse + from, n - from, &r->rise);
		if (r->cls != GROWTH_NEW) {
			double span = secs ? secs[n - 1] - secs[n - GROWTH_K] : GROWTH_K - 1;
			r->slope = span > 0 ? r->rise / span : 0;
		}
		if (r->cls == GROWTH_GROWING) {
			g->growing++;
			g->growing_bytes += r->inuse[n - 1];
		} else if (r->cls == GROWTH_BOUNDED)
			g->bounded++;
		a = b;
	}
	free(it);
	qsort(g->rows, g->n, sizeof(*g->rows), cmp_row);
	return 0;
}

void growth_free(struct growth *g)
{
	for (size_t i = 0; g->rows && i < g->n; i++)
		free(g->rows[i].inuse);
	free(g->rows);
	free(g->t);
	memset(g, 0, sizeof(*g));
}
