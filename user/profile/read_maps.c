/* Reading the BPF maps into a profile: counters, frames, --min-age recounts. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "util/array.h"
#include "util/log.h"
#include "profile/profile.h"
#include "util/procfs.h"
#include "profile/timeline.h"
#include "symbolize/pyframes.h"
#include "tracer/tracer.h"
#include "util/time.h"

struct range {
	uint64_t lo, hi;
};

/* Executable mappings of the saved maps text. */
static struct range *exec_ranges(const char *maps, size_t *n)
{
	struct range *r = NULL;
	struct map_entry e;
	size_t cap = 0;

	*n = 0;
	while (maps_next(&maps, &e)) {
		if (e.perms[2] != 'x')
			continue;
		if (ARRAY_RESERVE(r, cap, *n + 1, 64))
			break;
		r[(*n)++] = (struct range){ e.lo, e.hi };
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
			/* A Python frame or a mapping's kind is no address. */
			if (ht_pc_python(s->pcs[k]) || ht_pc_kind(s->pcs[k]))
				continue;
			/* maps lists mappings in address order: binary search. */
			size_t a = 0, b = nr;
			while (a < b) {
				size_t m = (a + b) / 2;
				if (r[m].hi <= s->pcs[k])
					a = m + 1;
				else
					b = m;
			}
			/* Frame 0 stays, outside code or not: it names the allocation (an exec'd-away image, say). */
			if (k && (a == nr || s->pcs[k] < r[a].lo)) {
				s->depth = k;
				p->trimmed++;
				break;
			}
		}
	}
	free(r);
}

/*
 * Visit every entry of a hash map with batched lookups (a few syscalls for
 * 100,000 entries instead of two each); kernels without batch ops for the
 * map fall back to key iteration.
 */
#define BATCH 4096

static int read_map(int fd, size_t ksz, size_t vsz,
		    int (*fn)(const void *key, const void *value, void *arg), void *arg)
{
	/* Zeroed: valgrind cannot see bpf() fill them, and would flag every read. */
	char *keys = calloc(BATCH, ksz), *values = calloc(BATCH, vsz);
	uint64_t in_tok = 0, out_tok = 0;
	bool first = true;
	int err = 0;

	if (!keys || !values) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		__u32 n = BATCH;
		int r = bpf_map_lookup_batch(fd, first ? NULL : &in_tok, &out_tok, keys, values, &n, NULL);
		if (r && errno != ENOENT) {
			if (!first || (errno != EINVAL && errno != ENOTSUP && errno != EOPNOTSUPP)) {
				err = -errno;
				goto out;
			}
			/* No batch lookups: one key at a time. */
			void *prev = NULL;
			while (!bpf_map_get_next_key(fd, prev, keys)) {
				memcpy(keys + ksz, keys, ksz);
				prev = keys + ksz;
				if (!bpf_map_lookup_elem(fd, keys, values) && (err = fn(keys, values, arg)))
					goto out;
			}
			goto out;
		}
		for (__u32 i = 0; i < n; i++)
			if ((err = fn(keys + i * ksz, values + i * vsz, arg)))
				goto out;
		if (r)
			break;  /* ENOENT: that was the last batch */
		in_tok = out_tok;
		first = false;
	}
out:
	free(keys);
	free(values);
	return err;
}

/*
 * Frames by stack hash: open addressing, filled from the stack map.  The
 * table grows with the stacks actually read, not with the map's capacity:
 * sized for max_stacks it cost tens of MB of pages per profile even for a
 * target with a handful of stacks (the free loop touched every slot).
 */
struct frames {
	uint64_t *hash;
	struct prof_stack *st;
	size_t mask, n;
	uint32_t max_depth;
};

static size_t frames_slot(const struct frames *t, uint64_t h)
{
	size_t i = (h * 0x9e3779b97f4a7c15ull) & t->mask;

	while (t->hash[i] && t->hash[i] != h)
		i = (i + 1) & t->mask;
	return i;
}

/* Keeps the load at most 1/2; slots = mask + 1 is a power of two. */
static int frames_grow(struct frames *t)
{
	size_t slots = t->hash ? 2 * (t->mask + 1) : 1024;
	struct frames g = { .mask = slots - 1, .n = t->n, .max_depth = t->max_depth };

	g.hash = calloc(slots, sizeof(*g.hash));
	g.st = calloc(slots, sizeof(*g.st));
	if (!g.hash || !g.st) {
		free(g.hash);
		free(g.st);
		return -ENOMEM;
	}
	for (size_t i = 0; t->hash && i <= t->mask; i++) {
		if (!t->hash[i])
			continue;
		size_t k = frames_slot(&g, t->hash[i]);
		g.hash[k] = t->hash[i];
		g.st[k] = t->st[i];
	}
	free(t->hash);
	free(t->st);
	*t = g;
	return 0;
}

static void frames_free(struct frames *t)
{
	for (size_t i = 0; t->st && i <= t->mask; i++)
		free(t->st[i].pcs);
	free(t->hash);
	free(t->st);
}

static int add_frames(const void *key, const void *value, void *arg)
{
	struct frames *t = arg;
	const struct ht_stack *st = value;     /* only its first t->max_depth frames exist */
	uint64_t h = *(const uint64_t *)key;
	uint32_t depth = st->depth < t->max_depth ? st->depth : t->max_depth;

	if (2 * (t->n + 1) > t->mask + 1 && frames_grow(t))
		return -ENOMEM;
	size_t i = frames_slot(t, h);
	if (t->hash[i])
		return 0;       /* a map yields each key once; be safe if it does not */
	t->n++;
	t->hash[i] = h;
	t->st[i].depth = depth;
	t->st[i].flags = st->flags;
	t->st[i].pcs = malloc((depth ? depth : 1) * sizeof(uint64_t));
	if (!t->st[i].pcs)
		return -ENOMEM;
	memcpy(t->st[i].pcs, st->pcs, depth * sizeof(uint64_t));
	return 0;
}

static struct prof_stack *find_frames(struct frames *t, uint64_t h)
{
	size_t i = frames_slot(t, h);

	return t->hash[i] ? &t->st[i] : NULL;
}

struct join {
	struct profile *p;
	struct frames *frames;
	size_t cap, cap_unmatched;      /* of p->stacks, p->unmatched */
	bool aged;              /* in-use comes from the live blocks old enough (--min-age) */
	uint32_t proc;
};

/* Every live block, of every level of the live map. */
static int read_live(const struct tracer *tr, int (*fn)(const void *key, const void *value, void *arg), void *arg)
{
	int fds[HT_LIVE_LEVELS], levels = tracer_live_fds(tr, fds), err = 0;

	for (int l = 0; !err && l < levels; l++)
		err = read_map(fds[l], sizeof(uint64_t), sizeof(struct ht_block), fn, arg);
	return err;
}

/* Was the block (at key) of an arena reset since it was allocated?  Its in-use counts went with the reset. */
static bool arena_reset_since(int arenas_fd, int arena_blocks_fd, const void *key, const struct ht_block *b,
			      uint32_t proc)
{
	struct ht_arena_block ab;
	struct ht_arena a = { 0 };

	if (!(b->flags & HT_BLOCK_ARENA) || bpf_map_lookup_elem(arena_blocks_fd, key, &ab))
		return false;
	struct ht_arena_key ak = { .arena = ab.arena, .proc = proc };
	bpf_map_lookup_elem(arenas_fd, &ak, &a);
	return a.gen != ab.gen;
}

/* --min-age: in-use per stack recounted from the live blocks at least that old. */
struct aged {
	struct profile *p;
	uint64_t born_before;
	int arenas_fd, arena_blocks_fd;
	uint32_t proc;
};

static int cmp_hash(const void *a, const void *b)
{
	uint64_t x = ((const struct prof_stack *)a)->hash, y = ((const struct prof_stack *)b)->hash;
	return x < y ? -1 : x > y;
}

static int add_aged_block(const void *key, const void *value, void *arg)
{
	const struct ht_block *b = value;
	struct aged *a = arg;
	struct prof_stack sk = { .hash = b->stack };

	if (ht_live_key_proc(*(const uint64_t *)key) != a->proc || b->time_ns > a->born_before)
		return 0;
	if (arena_reset_since(a->arenas_fd, a->arena_blocks_fd, key, b, a->proc))
		return 0;
	/* p->stacks is sorted by stack hash here (see profile_take). */
	struct prof_stack *s = bsearch(&sk, a->p->stacks, a->p->n, sizeof(*s), cmp_hash);
	if (s) {
		/* The same arithmetic as the BPF side's in-use counters. */
		uint64_t weight = ht_weight_q16(b->size, a->p->sample_rate);
		s->c.inuse_objects += b->objects;
		s->c.inuse_bytes += b->size;
		s->c.est_inuse_objects += weight * b->objects;
		s->c.est_inuse_bytes += ht_weighted_bytes(b->size, weight);
	}
	return 0;
}

/*
 * -f html: each live block by its stack and allocation time bin, so that a
 * time range of the chart can say what it left behind.  Collected as one
 * row per block, then sorted and summed: a block-by-block search of
 * per-stack lists would be quadratic in a heap of a million blocks.
 */
struct binned {
	struct profile *p;
	uint64_t start_ns, bin_ns;
	int arenas_fd, arena_blocks_fd;
	uint32_t proc, bins;
	struct live_row {
		uint32_t stack, bin;
		uint64_t objects, bytes;
	} *rows;
	size_t n, cap;
};

static int add_binned_block(const void *key, const void *value, void *arg)
{
	const struct ht_block *b = value;
	struct binned *a = arg;
	struct prof_stack sk = { .hash = b->stack };

	if (ht_live_key_proc(*(const uint64_t *)key) != a->proc)
		return 0;
	if (arena_reset_since(a->arenas_fd, a->arena_blocks_fd, key, b, a->proc))
		return 0;
	struct prof_stack *s = bsearch(&sk, a->p->stacks, a->p->n, sizeof(*s), cmp_hash);
	if (!s)
		return 0;
	if (ARRAY_RESERVE(a->rows, a->cap, a->n + 1, 4096))
		return -ENOMEM;
	uint64_t age = b->time_ns > a->start_ns ? b->time_ns - a->start_ns : 0;
	uint64_t bin = age / a->bin_ns;
	/* Counted like in-use: estimates with --sample-rate. */
	uint64_t weight = ht_weight_q16(b->size, a->p->sample_rate);
	a->rows[a->n++] = (struct live_row){ .stack = s - a->p->stacks, .bin = bin < a->bins ? bin : a->bins - 1,
					     .objects = ht_q16_round(weight * b->objects),
					     .bytes = ht_weighted_bytes(b->size, weight) };
	return 0;
}

static int cmp_row(const void *x, const void *y)
{
	const struct live_row *a = x, *b = y;

	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	return a->bin < b->bin ? -1 : a->bin > b->bin;
}

/* p->stacks sorted by hash; fills stacks[].live. */
static int read_live_bins(const struct profile_source *src, uint32_t proc, struct profile *p)
{
	struct binned a = { .p = p, .start_ns = p->start_ns, .arenas_fd = tracer_arenas_fd(src->tr),
			    .arena_blocks_fd = tracer_arena_blocks_fd(src->tr), .proc = proc, .bins = src->live_bins };
	int err;

	p->live_bins = src->live_bins;
	p->live_bin_ns = (p->now_ns - p->start_ns) / p->live_bins + 1;
	a.bin_ns = p->live_bin_ns;
	err = read_live(src->tr, add_binned_block, &a);
	if (a.n)
		qsort(a.rows, a.n, sizeof(*a.rows), cmp_row);
	for (size_t i = 0; !err && i < a.n;) {
		struct prof_stack *s = &p->stacks[a.rows[i].stack];
		size_t k = i + 1, bins = 1;
		for (; k < a.n && a.rows[k].stack == a.rows[i].stack; k++)
			bins += a.rows[k].bin != a.rows[k - 1].bin;
		if (!(s->live = calloc(bins, sizeof(*s->live)))) {
			err = -ENOMEM;
			break;
		}
		for (; i < k; i++) {
			struct prof_live *l = &s->live[s->n_live];
			if (s->n_live && l[-1].bin == a.rows[i].bin)
				l--;
			else
				s->n_live++;
			l->bin = a.rows[i].bin;
			l->objects += a.rows[i].objects;
			l->bytes += a.rows[i].bytes;
		}
	}
	free(a.rows);
	return err;
}

/* A site's counters joined with its frames; the frames move into the profile. */
/* The frames of s's stack (s->hash) move from the table into s. */
static void take_frames(struct join *j, struct prof_stack *s)
{
	struct prof_stack *f = find_frames(j->frames, s->hash);

	if (f && f->pcs) {
		s->pcs = f->pcs;
		s->depth = f->depth;
		s->flags = f->flags;
		f->pcs = NULL;
	}
}

/* A site that only counts unmatched frees: the stack of a free, kept apart from the allocations'. */
static int add_unmatched(struct join *j, const void *key, const struct ht_site *c)
{
	struct profile *p = j->p;
	struct prof_stack *n;

	if (ARRAY_RESERVE(p->unmatched, j->cap_unmatched, p->n_unmatched + 1, 16))
		return -ENOMEM;
	n = &p->unmatched[p->n_unmatched++];
	memset(n, 0, sizeof(*n));
	n->c.unmatched_frees = c->unmatched_frees;
	n->hash = ((const struct ht_site_key *)key)->stack;
	take_frames(j, n);
	return 0;
}

static int add_site(const void *key, const void *value, void *arg)
{
	struct join *j = arg;
	const struct ht_site *c = value;
	struct profile *p = j->p;

	if (((const struct ht_site_key *)key)->proc != j->proc)
		return 0;
	if (!c->alloc_objects)
		return c->unmatched_frees ? add_unmatched(j, key, c) : 0;
	if (ARRAY_RESERVE(p->stacks, j->cap, p->n + 1, 256))
		return -ENOMEM;
	struct prof_stack *s = &p->stacks[p->n++];
	memset(s, 0, sizeof(*s));
	s->c = *c;
	s->hash = ((const struct ht_site_key *)key)->stack;
	/* A site unchanged since the current peak epoch began still holds its at-peak values. */
	if (c->epoch != p->totals.epoch) {
		s->c.peak_objects = c->est_inuse_objects;
		s->c.peak_bytes = c->est_inuse_bytes;
	}
	if (j->aged) {
		s->c.inuse_objects = s->c.inuse_bytes = 0;
		s->c.est_inuse_objects = s->c.est_inuse_bytes = 0;
	}
	take_frames(j, s);
	return 0;
}

/*
 * The counters outputs report are the estimates (in exact mode the same
 * numbers: every weight is 1); the raw counts stay beside them for heap_v2.
 */
static void to_estimates(struct prof_stack *s)
{
	struct ht_site *c = &s->c;

	s->sampled = (struct prof_sampled){ c->inuse_objects, c->inuse_bytes, c->alloc_objects, c->alloc_bytes };
	c->inuse_objects = ht_q16_round(c->est_inuse_objects);
	c->inuse_bytes = c->est_inuse_bytes;
	c->alloc_objects = ht_q16_round(c->est_alloc_objects);
	c->alloc_bytes = c->est_alloc_bytes;
	c->peak_objects = ht_q16_round(c->peak_objects);
	c->est_inuse_objects = c->est_inuse_bytes = 0;
	c->est_alloc_objects = c->est_alloc_bytes = 0;
}

void profile_session_counters(const struct profile_source *src, uint64_t counters[HT_COUNTER_MAX])
{
	tracer_session_counters(src->tr, counters);
	if (src->more_counters)
		src->more_counters(src->more_arg, HT_ALL_PROCS, counters);
}

struct py_scan {
	pid_t pid;
	uint32_t max_depth;
};

static int note_python(const void *key, const void *value, void *arg)
{
	const struct py_scan *ps = arg;
	const struct ht_stack *st = value;

	(void)key;
	pyf_note_stack(ps->pid, (const uint64_t *)st->pcs, st->depth < ps->max_depth ? st->depth : ps->max_depth);
	return 0;
}

int profile_note_python(const struct tracer *tr, pid_t pid)
{
	struct py_scan ps = { pid, (tracer_stack_value_size(tr) - offsetof(struct ht_stack, pcs)) / sizeof(uint64_t) };

	if (!pyf_active())
		return 0;
	return read_map(tracer_stacks_fd(tr), sizeof(uint64_t), tracer_stack_value_size(tr), note_python, &ps);
}

/*
 * s's Python frames as a profile holds them (pyf_compact), their code read
 * first where it was not yet (sampled: no drain saw the stack), while pid lives.
 */
static void python_frames(pid_t pid, struct prof_stack *s)
{
	if (!pyf_active())
		return;
	pyf_note_stack(pid, s->pcs, s->depth);
	s->depth = pyf_compact(s->pcs, s->depth);
}

int profile_take(const struct profile_source *src, uint32_t proc, pid_t pid, const char *maps, struct profile *p)
{
	const struct tracer *tr = src->tr;
	struct frames t = { 0 };
	int err;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->maps = maps;
	p->start_ns = src->start_ns;
	p->min_age = src->min_age;
	p->command = src->command;
	p->sample_rate = tr->sample_rate;
	tracer_counters(tr, proc, p->counters);
	if (src->more_counters)
		src->more_counters(src->more_arg, proc, p->counters);
	tracer_totals(tr, proc, &p->totals);
	p->now_ns = monotonic_ns();
	rss_read(pid, &p->rss);
	p->timeline = timeline_copy(src->timeline, proc);

	t.max_depth = (tracer_stack_value_size(tr) - offsetof(struct ht_stack, pcs)) / sizeof(uint64_t);
	struct join j = { .p = p, .frames = &t, .aged = p->min_age > 0, .proc = proc };
	err = frames_grow(&t);
	if (!err)
		err = read_map(tracer_stacks_fd(tr), sizeof(uint64_t), tracer_stack_value_size(tr), add_frames, &t);
	if (!err)
		err = read_map(tracer_sites_fd(tr), sizeof(struct ht_site_key), sizeof(struct ht_site), add_site, &j);
	frames_free(&t);
	if (!err && j.aged) {
		struct aged a = { .p = p, .born_before = p->now_ns - (uint64_t)(p->min_age * 1e9),
				  .arenas_fd = tracer_arenas_fd(tr), .arena_blocks_fd = tracer_arena_blocks_fd(tr),
				  .proc = proc };
		if (p->n)       /* no stack yet: qsort takes no NULL */
			qsort(p->stacks, p->n, sizeof(*p->stacks), cmp_hash);
		err = read_live(tr, add_aged_block, &a);
	}
	if (!err && src->live_bins) {
		if (p->n)
			qsort(p->stacks, p->n, sizeof(*p->stacks), cmp_hash);
		err = read_live_bins(src, proc, p);
	}
	if (err) {
		ht_err("cannot read the profile from the BPF maps: %s", strerror(-err));
		profile_free(p);
		return -1;
	}

	for (size_t i = 0; i < p->n; i++) {
		to_estimates(&p->stacks[i]);
		python_frames(pid, &p->stacks[i]);
	}
	for (size_t i = 0; i < p->n_unmatched; i++)
		python_frames(pid, &p->unmatched[i]);
	trim_stacks(p);
	profile_normalize(p);
	return 0;
}

