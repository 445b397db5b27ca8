/*
 * --merge: one profile of the traced process tree.  Each process's profile
 * is taken as for a file of its own, its stacks labelled with its pid, and
 * all of them joined.  A pc means something only in its own process's
 * memory map: the children of a pre-fork server share the parent's code
 * mappings, so their pcs mean the same, but a child that executed another
 * program (or the same one, mapped elsewhere) has its own.  Processes
 * whose code mappings agree (none overlaps another differently) share an
 * address space; each other space k moves its pcs and its maps lines up by
 * k << SPACE_SHIFT, above every user address, so that the tree's one maps
 * text (own_maps) names every pc for the symbolizer, pprof's mappings and
 * the legacy text's MAPPED_LIBRARIES alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/timeline.h"
#include "tracer/tracer.h"
#include "util/array.h"
#include "util/log.h"

/* x86-64 user addresses are below 2^47 (2^56 with 5-level paging, which a process must ask for). */
#define SPACE_SHIFT 48
#define MAX_SPACES 256

/* One line of a maps text, its range parsed, the rest after the range kept. */
struct line {
	uint64_t lo, hi, off;
	bool exec;
	const char *path;       /* into rest */
	const char *rest;       /* " r-xp 00001000 08:01 1234   /usr/lib/..." (NUL-terminated copy) */
};

struct space {
	struct line *l;
	size_t n, cap;
};

void tree_procs_free(struct tree_proc *procs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(procs[i].maps);
		free(procs[i].name);
	}
	free(procs);
}

/* The lines of a maps text; their rest strings are copies (*n lines, NULL when out of memory). */
static struct line *parse_lines(const char *maps, size_t *n)
{
	struct line *v = NULL;
	size_t cap = 0;

	*n = 0;
	for (const char *p = maps ? maps : ""; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		unsigned long lo, hi, off;
		char perms[8];
		int at = 0;
		if (sscanf(p, "%lx-%lx %7s %lx %*s %*s%n", &lo, &hi, perms, &off, &at) == 4 && at > 0 &&
		    (size_t)at <= len) {
			if (ARRAY_RESERVE(v, cap, *n + 1, 64))
				goto oom;
			const char *dash = memchr(p, ' ', len);
			char *rest = strndup(dash, len - (size_t)(dash - p));
			if (!rest)
				goto oom;
			const char *path = rest + (at - (dash - p));
			while (*path == ' ')
				path++;
			v[(*n)++] = (struct line){ lo, hi, off, perms[2] == 'x', path, rest };
		}
		p += len + (end != NULL);
	}
	return v;
oom:
	for (size_t i = 0; i < *n; i++)
		free((char *)v[i].rest);
	free(v);
	*n = 0;
	return NULL;
}

static bool same_line(const struct line *a, const struct line *b)
{
	return a->lo == b->lo && a->hi == b->hi && a->off == b->off && !strcmp(a->path, b->path);
}

/*
 * Do the code mappings of l agree with the space's?  None may overlap one
 * of them unless it is the same, and no object may be in both at two
 * places (a program executed again, a library loaded again elsewhere):
 * the symbolizer knows an object at one place of an address space.
 */
static bool agrees(const struct space *s, const struct line *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!l[i].exec)
			continue;
		for (size_t k = 0; k < s->n; k++) {
			const struct line *f = &s->l[k];
			if (!f->exec || same_line(&l[i], f))
				continue;
			if (l[i].lo < f->hi && f->lo < l[i].hi)
				return false;
			if (*l[i].path && !strcmp(l[i].path, f->path) && l[i].lo - l[i].off != f->lo - f->off)
				return false;
		}
	}
	return true;
}

/* Add the lines the space has not: a line overlapping one it has is the same mapping seen again, or data. */
static int join(struct space *s, struct line *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bool have = false;
		for (size_t k = 0; k < s->n && !have; k++)
			have = l[i].lo < s->l[k].hi && s->l[k].lo < l[i].hi;
		if (have) {
			free((char *)l[i].rest);
			continue;
		}
		if (ARRAY_RESERVE(s->l, s->cap, s->n + 1, 64)) {
			for (; i < n; i++)
				free((char *)l[i].rest);
			return -1;
		}
		s->l[s->n++] = l[i];
	}
	return 0;
}

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The tree's maps text: every space's lines in address order, moved up into the space. */
static char *tree_maps(struct space *sp, size_t n_sp)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return NULL;
	for (size_t k = 0; k < n_sp; k++) {
		uint64_t shift = (uint64_t)k << SPACE_SHIFT;
		if (sp[k].n)
			qsort(sp[k].l, sp[k].n, sizeof(*sp[k].l), cmp_line);
		for (size_t i = 0; i < sp[k].n; i++)
			/* Not a user address ([vsyscall]): the first space only, where it stays put. */
			if (!k || sp[k].l[i].hi <= 1ull << SPACE_SHIFT)
					fprintf(m, "%lx-%lx%s\n", (unsigned long)(sp[k].l[i].lo + shift),
					(unsigned long)(sp[k].l[i].hi + shift), sp[k].l[i].rest);
	}
	if (fclose(m)) {
		free(text);
		return NULL;
	}
	return text;
}

/* One process's profile joined into p: its stacks labelled and moved into its space. */
static int add_process(struct profile *p, struct profile *q, size_t *cap, uint64_t shift)
{
	if (ARRAY_RESERVE(p->stacks, *cap, p->n + q->n, 256))
		return -1;
	for (size_t i = 0; i < q->n; i++) {
		struct prof_stack *s = &q->stacks[i];
		s->pid = q->pid;
		for (uint32_t d = 0; d < s->depth; d++)
			if (!ht_pc_python(s->pcs[d]) && !ht_pc_kind(s->pcs[d]))
				s->pcs[d] += shift;
		p->stacks[p->n++] = *s;
	}
	q->n = 0;       /* the stacks are p's now */
	for (int i = 0; i < HT_COUNTER_MAX; i++)
		p->counters[i] += q->counters[i];
	struct ht_totals *t = &p->totals, *u = &q->totals;
	t->inuse_bytes += u->inuse_bytes;
	t->inuse_objects += u->inuse_objects;
	/* Each process's own peak, summed: the tree's peak is at most that. */
	t->peak_bytes += u->peak_bytes;
	if (u->peak_ns > t->peak_ns)
		t->peak_ns = u->peak_ns;
	t->execs += u->execs;
	t->exec_dropped += u->exec_dropped;
	for (int i = 0; i < HT_SIZE_BUCKETS; i++)
		t->alloc_sizes[i] += u->alloc_sizes[i];
	t->alloc_bytes += u->alloc_bytes;
	p->trimmed += q->trimmed;
	rss_add(&p->rss, &q->rss);
	if (q->now_ns > p->now_ns)
		p->now_ns = q->now_ns;
	return 0;
}

int profile_take_main(const struct profile_source *src, pid_t pid, const char *maps, struct profile *p)
{
	struct tree_proc *procs = NULL;
	size_t n = 0, cap = 0, n_sp = 0;
	struct space *sp = NULL;
	int err = -1;

	if (!src->tree)
		return profile_take(src, 0, pid, maps, p);
	if (src->tree(src->tree_arg, &procs, &n))
		return -1;
	memset(p, 0, sizeof(*p));
	if (!(sp = calloc(n + 1 < MAX_SPACES ? n + 1 : MAX_SPACES, sizeof(*sp))))
		goto out;
	for (size_t i = 0; i <= n; i++) {
		uint32_t slot = i ? procs[i - 1].slot : 0;
		pid_t who = i ? procs[i - 1].pid : pid;
		const char *m = i ? procs[i - 1].maps : maps;
		struct profile q;
		size_t nl, k;
		struct line *l = parse_lines(m, &nl);

		if (!l && nl)
			goto out;
		for (k = 0; k < n_sp && !agrees(&sp[k], l, nl); k++)
			;
		if (k == n_sp) {
			if (n_sp == MAX_SPACES) {
				ht_err("--merge: more than %d different memory maps in the tree", MAX_SPACES);
				free(l);
				goto out;
			}
			n_sp++;
		}
		int j = join(&sp[k], l, nl);
		free(l);
		if (j)
			goto out;
		if (profile_take(src, slot, who, m, &q))
			goto out;
		if (!i) {
			/* The target's profile is the frame: its times, sample rate, command. */
			*p = q;
			p->stacks = NULL;
			p->n = 0;
			p->timeline = NULL;     /* the heap over time is per process: no tree's */
			memset(p->counters, 0, sizeof(p->counters));
			memset(&p->totals, 0, sizeof(p->totals));
			p->trimmed = 0;
			memset(&p->rss, 0, sizeof(p->rss));
			p->totals.epoch = q.totals.epoch;
		}
		int a = add_process(p, &q, &cap, (uint64_t)k << SPACE_SHIFT);
		if (i)
			profile_free(&q);
		else {
			free(q.stacks);
			free(q.timeline);
		}
		if (a)
			goto out;
	}
	if (!(p->own_maps = tree_maps(sp, n_sp)))
		goto out;
	p->maps = p->own_maps;
	p->pid = pid;
	if (n && !(p->programs = calloc(n, sizeof(*p->programs))))
		goto out;
	for (size_t i = 0; i < n; i++) {
		p->programs[p->n_programs++] = (struct prof_program){ .pid = procs[i].pid, .name = procs[i].name };
		procs[i].name = NULL;
	}
	profile_normalize(p);
	err = 0;
out:
	for (size_t k = 0; sp && k < n_sp; k++) {
		for (size_t i = 0; i < sp[k].n; i++)
			free((char *)sp[k].l[i].rest);
		free(sp[k].l);
	}
	free(sp);
	tree_procs_free(procs, n);
	if (err) {
		ht_err("cannot take the profile of the process tree: %s", strerror(errno ? errno : ENOMEM));
		profile_free(p);
	}
	return err;
}

int profile_proc_totals(const struct profile_source *src, pid_t pid, struct proc_totals **out, size_t *n)
{
	struct tree_proc *procs = NULL;
	size_t k = 0;
	struct proc_totals *v;

	if (src->tree && src->tree(src->tree_arg, &procs, &k))
		return -1;
	if (!(v = calloc(k + 1, sizeof(*v)))) {
		tree_procs_free(procs, k);
		return -1;
	}
	v[0].pid = pid;
	tracer_totals(src->tr, 0, &v[0].t);
	for (size_t i = 0; i < k; i++) {
		v[i + 1].pid = procs[i].pid;
		v[i + 1].name = procs[i].name;
		procs[i].name = NULL;
		tracer_totals(src->tr, procs[i].slot, &v[i + 1].t);
	}
	tree_procs_free(procs, k);
	*out = v;
	*n = k + 1;
	return 0;
}

void proc_totals_free(struct proc_totals *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

void profile_main_totals(const struct profile_source *src, struct ht_totals *tot)
{
	struct tree_proc *procs = NULL;
	size_t n = 0;

	tracer_totals(src->tr, 0, tot);
	if (!src->tree || src->tree(src->tree_arg, &procs, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		struct ht_totals u;
		tracer_totals(src->tr, procs[i].slot, &u);
		tot->inuse_bytes += u.inuse_bytes;
		tot->inuse_objects += u.inuse_objects;
		tot->peak_bytes += u.peak_bytes;
		tot->execs += u.execs;
		tot->exec_dropped += u.exec_dropped;
	}
	tree_procs_free(procs, n);
}

void profile_main_rss(const struct profile_source *src, pid_t pid, struct ht_rss *r)
{
	struct tree_proc *procs = NULL;
	size_t n = 0;

	rss_read(pid, r);
	if (!src->tree || src->tree(src->tree_arg, &procs, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		struct ht_rss u;
		rss_read(procs[i].pid, &u);
		rss_add(r, &u);
	}
	tree_procs_free(procs, n);
}

int profile_unlabel(const struct profile *p, struct profile *out)
{
	*out = *p;
	out->own_maps = NULL;   /* maps stays p's */
	out->programs = NULL;   /* unlabelled: no program labels */
	out->n_programs = 0;
	out->timeline = NULL;
	out->n = 0;
	if (!(out->stacks = calloc(p->n ? p->n : 1, sizeof(*out->stacks))))
		return -1;
	for (size_t i = 0; i < p->n; i++) {
		struct prof_stack *s = &out->stacks[i];
		*s = p->stacks[i];
		s->pid = 0;
		s->live = NULL;
		s->n_live = 0;
		s->pcs = malloc((s->depth ? s->depth : 1) * sizeof(uint64_t));
		if (s->pcs && p->stacks[i].n_live)
			s->live = malloc(p->stacks[i].n_live * sizeof(*s->live));
		if (!s->pcs || (p->stacks[i].n_live && !s->live)) {
			free(s->pcs);
			profile_free(out);
			return -1;
		}
		if (s->depth)   /* the lost-stack site has no frames, and may have no pcs array */
			memcpy(s->pcs, p->stacks[i].pcs, s->depth * sizeof(uint64_t));
		if (s->live) {
			memcpy(s->live, p->stacks[i].live, p->stacks[i].n_live * sizeof(*s->live));
			s->n_live = p->stacks[i].n_live;
		}
		out->n++;
	}
	profile_normalize(out);
	return 0;
}

void profile_main_counters(const struct profile_source *src, uint64_t counters[HT_COUNTER_MAX])
{
	struct tree_proc *procs = NULL;
	size_t n = 0;

	tracer_counters(src->tr, 0, counters);
	if (src->more_counters)
		src->more_counters(src->more_arg, 0, counters);
	if (!src->tree || src->tree(src->tree_arg, &procs, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t c[HT_COUNTER_MAX];
		tracer_counters(src->tr, procs[i].slot, c);
		if (src->more_counters)
			src->more_counters(src->more_arg, procs[i].slot, c);
		for (int k = 0; k < HT_COUNTER_MAX; k++)
			counters[k] += c[k];
	}
	tree_procs_free(procs, n);
}
