/* Profiles as data: counters, merging, at-peak views, diffs and orders. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include "profile/profile.h"
#include "util/log.h"

static const char *const value_names[] = {
	[V_INUSE_SPACE] = "inuse_space",
	[V_INUSE_OBJECTS] = "inuse_objects",
	[V_ALLOC_SPACE] = "alloc_space",
	[V_ALLOC_OBJECTS] = "alloc_objects",
	[V_REALLOC_OBJECTS] = "realloc_objects",
	[V_REALLOC_SPACE] = "realloc_space",
};

const char *value_name(enum ht_value v)
{
	return (size_t)v < sizeof(value_names) / sizeof(value_names[0]) ? value_names[v] : NULL;
}

int value_parse(const char *s, enum ht_value *v)
{
	for (size_t i = 0; i < sizeof(value_names) / sizeof(value_names[0]); i++)
		if (!strcmp(s, value_names[i])) {
			*v = i;
			return 0;
		}
	return -1;
}

int64_t site_value(const struct ht_site *c, enum ht_value v)
{
	switch (v) {
	case V_INUSE_SPACE: return c->inuse_bytes;
	case V_INUSE_OBJECTS: return c->inuse_objects;
	case V_ALLOC_SPACE: return c->alloc_bytes;
	case V_ALLOC_OBJECTS: return c->alloc_objects;
	case V_REALLOC_OBJECTS: return c->realloc_objects;
	case V_REALLOC_SPACE: return c->realloc_bytes;
	}
	return 0;
}

int profile_check_range(const struct profile *p, const char *path)
{
	static const char *const names[4] = { "in-use objects", "in-use bytes", "allocated objects",
					      "allocated bytes" };
	int64_t sum[4] = { 0 };

	for (size_t i = 0; i < p->n; i++) {
		const struct ht_site *c = &p->stacks[i].c;
		int64_t v[4] = { (int64_t)c->inuse_objects, (int64_t)c->inuse_bytes, (int64_t)c->alloc_objects,
				 (int64_t)c->alloc_bytes };
		for (int k = 0; k < 4; k++) {
			if (v[k] < 0) {
				ht_err("%s: record %zu has negative %s (%" PRId64 ")", path, i + 1, names[k], v[k]);
				return -1;
			}
			if (__builtin_add_overflow(sum[k], v[k], &sum[k])) {
				ht_err("%s: the %s of its records add up past 64 bits", path, names[k]);
				return -1;
			}
		}
	}
	return 0;
}

/* Counters add with wrap-around, never signed overflow: profiles read back may hold anything. */
#define ADD(a, b) ((a) = (__typeof__(a))((uint64_t)(a) + (uint64_t)(b)))
#define SUB(a, b) ((a) = (__typeof__(a))((uint64_t)(a) - (uint64_t)(b)))

void site_add(struct ht_site *to, const struct ht_site *c)
{
	ADD(to->inuse_objects, c->inuse_objects);
	ADD(to->inuse_bytes, c->inuse_bytes);
	ADD(to->alloc_objects, c->alloc_objects);
	ADD(to->alloc_bytes, c->alloc_bytes);
	ADD(to->peak_objects, c->peak_objects);
	ADD(to->peak_bytes, c->peak_bytes);
	ADD(to->temporary, c->temporary);
	for (int i = 0; i < HT_LIFE_BUCKETS; i++)
		ADD(to->lifetimes[i], c->lifetimes[i]);
	ADD(to->reset_frees, c->reset_frees);
	ADD(to->missed_frees, c->missed_frees);
	ADD(to->realloc_objects, c->realloc_objects);
	ADD(to->realloc_bytes, c->realloc_bytes);
}

int cmp_frames(const void *a, const void *b)
{
	const struct prof_stack *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	int c = x->depth ? memcmp(x->pcs, y->pcs, x->depth * sizeof(uint64_t)) : 0;
	/* --merge: the same frames in two processes are two stacks until profile_unlabel. */
	return c ? c : x->pid != y->pid ? (x->pid < y->pid ? -1 : 1) : 0;
}

static void sampled_add(struct prof_sampled *to, const struct prof_sampled *c)
{
	ADD(to->inuse_objects, c->inuse_objects);
	ADD(to->inuse_bytes, c->inuse_bytes);
	ADD(to->alloc_objects, c->alloc_objects);
	ADD(to->alloc_bytes, c->alloc_bytes);
}

/* Live blocks of a stack merged into another with the same frames: the lists are concatenated. */
static void live_merge(struct prof_stack *to, struct prof_stack *from)
{
	struct prof_live *g;

	if (!from->n_live)
		return;
	g = realloc(to->live, (to->n_live + from->n_live) * sizeof(*g));
	if (g) {
		memcpy(g + to->n_live, from->live, from->n_live * sizeof(*g));
		to->live = g;
		to->n_live += from->n_live;
	}
	free(from->live);
	from->live = NULL;
	from->n_live = 0;
}

void profile_normalize(struct profile *p)
{
	size_t out = 0;

	memset(&p->total, 0, sizeof(p->total));
	if (p->n)
		qsort(p->stacks, p->n, sizeof(*p->stacks), cmp_frames);
	for (size_t i = 0; i < p->n; i++) {
		site_add(&p->total, &p->stacks[i].c);
		if (out && !cmp_frames(&p->stacks[out - 1], &p->stacks[i])) {
			live_merge(&p->stacks[out - 1], &p->stacks[i]);
			site_add(&p->stacks[out - 1].c, &p->stacks[i].c);
			sampled_add(&p->stacks[out - 1].sampled, &p->stacks[i].sampled);
			p->stacks[out - 1].hash = 0;
			p->stacks[out - 1].flags |= p->stacks[i].flags;
			free(p->stacks[i].pcs);
			continue;
		}
		p->stacks[out++] = p->stacks[i];
	}
	p->n = out;
}

void profile_at_peak(struct profile *p)
{
	/* Sampled: the at-peak estimates have no raw counts behind them. */
	p->sample_rate = 0;
	p->total.inuse_objects = p->total.inuse_bytes = 0;
	for (size_t i = 0; i < p->n; i++) {
		struct ht_site *c = &p->stacks[i].c;
		c->inuse_objects = c->peak_objects;
		c->inuse_bytes = c->peak_bytes;
		p->total.inuse_objects += c->inuse_objects;
		p->total.inuse_bytes += c->inuse_bytes;
	}
}

static void site_sub(struct ht_site *to, const struct ht_site *c)
{
	SUB(to->inuse_objects, c->inuse_objects);
	SUB(to->inuse_bytes, c->inuse_bytes);
	SUB(to->alloc_objects, c->alloc_objects);
	SUB(to->alloc_bytes, c->alloc_bytes);
	SUB(to->temporary, c->temporary);
	SUB(to->realloc_objects, c->realloc_objects);
	SUB(to->realloc_bytes, c->realloc_bytes);
}

int profile_diff(const struct profile *old, const struct profile *new, struct profile *d)
{
	size_t i = 0, k = 0;

	*d = *new;
	d->unmatched = NULL;    /* new's own */
	d->n_unmatched = 0;
	d->timeline = NULL;     /* new's own; a diff has no time */
	d->own_maps = NULL;     /* new's own; borrowed */
	d->programs = NULL;     /* new's own; a diff labels no program */
	d->n_programs = 0;
	d->live_bins = 0;
	d->is_diff = true;
	d->sample_rate = 0;     /* changes of estimates */
	d->stacks = calloc(old->n + new->n + 1, sizeof(*d->stacks));
	d->n = 0;
	memset(&d->total, 0, sizeof(d->total));
	if (!d->stacks)
		return -1;
	/* Both are sorted by frames: a merge join. */
	while (i < old->n || k < new->n) {
		int c = i == old->n ? 1 : k == new->n ? -1 : cmp_frames(&old->stacks[i], &new->stacks[k]);
		const struct prof_stack *src = c <= 0 ? &old->stacks[i] : &new->stacks[k];
		struct prof_stack s = { .depth = src->depth, .pid = src->pid };

		if (c >= 0)
			site_add(&s.c, &new->stacks[k].c);
		if (c <= 0)
			site_sub(&s.c, &old->stacks[i].c);
		i += c <= 0;
		k += c >= 0;
		if (!s.c.inuse_objects && !s.c.inuse_bytes && !s.c.alloc_objects && !s.c.alloc_bytes &&
		    !s.c.realloc_objects && !s.c.realloc_bytes)
			continue;
		s.pcs = malloc((s.depth ? s.depth : 1) * sizeof(uint64_t));
		if (!s.pcs) {
			profile_free(d);
			return -1;
		}
		memcpy(s.pcs, src->pcs, s.depth * sizeof(uint64_t));
		site_add(&d->total, &s.c);
		d->stacks[d->n++] = s;
	}
	return 0;
}

void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->stacks[i].pcs);
		free(p->stacks[i].live);
	}
	free(p->stacks);
	for (size_t i = 0; i < p->n_unmatched; i++)
		free(p->unmatched[i].pcs);
	free(p->unmatched);
	free(p->timeline);
	free(p->own_maps);
	for (size_t i = 0; i < p->n_programs; i++)
		free(p->programs[i].name);
	free(p->programs);
	memset(p, 0, sizeof(*p));
}

static int cmp_value(const void *a, const void *b, void *arg)
{
	const struct profile *p = ((const void **)arg)[0];
	enum ht_value v = *(const enum ht_value *)((const void **)arg)[1];
	int64_t x = site_value(&p->stacks[*(const size_t *)a].c, v);
	int64_t y = site_value(&p->stacks[*(const size_t *)b].c, v);

	if (x != y)
		return x > y ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

size_t *profile_order(const struct profile *p, enum ht_value v)
{
	size_t *idx = malloc((p->n ? p->n : 1) * sizeof(*idx));
	const void *arg[2] = { p, &v };

	if (!idx)
		return NULL;
	for (size_t i = 0; i < p->n; i++)
		idx[i] = i;
	qsort_r(idx, p->n, sizeof(*idx), cmp_value, arg);
	return idx;
}
