#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "log.h"
#include "profile.h"
#include "tracer.h"

static const char *const value_names[] = {
	[V_INUSE_SPACE] = "inuse_space",
	[V_INUSE_OBJECTS] = "inuse_objects",
	[V_ALLOC_SPACE] = "alloc_space",
	[V_ALLOC_OBJECTS] = "alloc_objects",
};

const char *value_name(enum ht_value v)
{
	return value_names[v];
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
	}
	return 0;
}

static void site_add(struct ht_site *to, const struct ht_site *c)
{
	to->inuse_objects += c->inuse_objects;
	to->inuse_bytes += c->inuse_bytes;
	to->alloc_objects += c->alloc_objects;
	to->alloc_bytes += c->alloc_bytes;
}

static int cmp_frames(const void *a, const void *b)
{
	const struct prof_stack *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(x->pcs, y->pcs, x->depth * sizeof(uint64_t));
}

/* Frames of a stack hash, as the BPF side stored them. */
static int read_stack(int fd, uint64_t hash, struct prof_stack *s)
{
	struct ht_stack st;

	if (hash == HT_STACK_LOST || bpf_map_lookup_elem(fd, &hash, &st))
		return 0;
	if (st.depth > HT_MAX_STACK_DEPTH)
		st.depth = HT_MAX_STACK_DEPTH;
	s->pcs = malloc((st.depth ? st.depth : 1) * sizeof(uint64_t));
	if (!s->pcs)
		return -ENOMEM;
	memcpy(s->pcs, st.pcs, st.depth * sizeof(uint64_t));
	s->depth = st.depth;
	return 0;
}

struct range {
	uint64_t lo, hi;
};

/* Executable mappings of the saved maps text. */
static struct range *exec_ranges(const char *maps, size_t *n)
{
	struct range *r = NULL;
	size_t cap = 0;

	*n = 0;
	for (const char *line = maps; line && *line;) {
		const char *nl = strchrnul(line, '\n');
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[2] == 'x') {
			if (*n == cap) {
				cap = cap ? 2 * cap : 64;
				struct range *g = realloc(r, cap * sizeof(*g));
				if (!g)
					break;
				r = g;
			}
			r[(*n)++] = (struct range){ lo, hi };
		}
		line = *nl ? nl + 1 : nl;
	}
	return r;
}

/*
 * A frame-pointer walk that enters code built without frame pointers reads
 * whatever the stack holds next (strings, counters) as return addresses.  A
 * "return address" outside every executable mapping ends the real stack.
 */
static void trim_stacks(struct profile *p)
{
	size_t nr;
	struct range *r = exec_ranges(p->maps, &nr);

	if (!r)
		return;
	for (size_t i = 0; i < p->n; i++) {
		struct prof_stack *s = &p->stacks[i];
		for (uint32_t k = 0; k < s->depth; k++) {
			bool ok = false;
			for (size_t m = 0; m < nr && !ok; m++)
				ok = s->pcs[k] >= r[m].lo && s->pcs[k] < r[m].hi;
			if (!ok) {
				s->depth = k;
				p->trimmed++;
				break;
			}
		}
	}
	free(r);
}

int profile_read(struct profile *p, const struct tracer *tr, pid_t pid, const char *maps)
{
	int sites = tracer_sites_fd(tr), stacks = tracer_stacks_fd(tr);
	struct ht_site_key key, next, *prev = NULL;
	size_t cap = 0;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->maps = maps;
	tracer_counters(tr, p->counters);
	while (!bpf_map_get_next_key(sites, prev, &next)) {
		struct ht_site c;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(sites, &key, &c))
			continue;
		if (!c.alloc_objects)
			continue;
		if (p->n == cap) {
			cap = cap ? 2 * cap : 256;
			struct prof_stack *n = realloc(p->stacks, cap * sizeof(*n));
			if (!n)
				goto oom;
			p->stacks = n;
		}
		struct prof_stack *s = &p->stacks[p->n];
		memset(s, 0, sizeof(*s));
		s->c = c;
		if (read_stack(stacks, key.stack, s))
			goto oom;
		p->n++;
		site_add(&p->total, &c);
	}

	trim_stacks(p);
	qsort(p->stacks, p->n, sizeof(*p->stacks), cmp_frames);
	size_t out = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (out && !cmp_frames(&p->stacks[out - 1], &p->stacks[i])) {
			site_add(&p->stacks[out - 1].c, &p->stacks[i].c);
			free(p->stacks[i].pcs);
			continue;
		}
		p->stacks[out++] = p->stacks[i];
	}
	p->n = out;
	return 0;
oom:
	ht_err("out of memory reading the profile");
	profile_free(p);
	return -1;
}

void profile_free(struct profile *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->stacks[i].pcs);
	free(p->stacks);
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
