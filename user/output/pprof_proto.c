/*
 * The gzipped protobuf profile of github.com/google/pprof (profile.proto),
 * with symbols inside, so pprof, Pyroscope, Parca and speedscope need no
 * binaries.  A small hand encoder: varints and length-delimited fields.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "util/array.h"
#include "util/elfobj.h"
#include "output/output.h"
#include "util/procfs.h"
#include "tracer/tracer.h"
#include "util/version.h"

struct pbuf {
	uint8_t *d;
	size_t n, cap;
	bool oom;
};

static void pb_raw(struct pbuf *b, const void *p, size_t len)
{
	if (b->oom)
		return;
	if (ARRAY_RESERVE(b->d, b->cap, b->n + len, 256)) {
		b->oom = true;
		return;
	}
	memcpy(b->d + b->n, p, len);
	b->n += len;
}

static void pb_varint(struct pbuf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;

	do {
		t[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pb_raw(b, t, n);
}

/* A scalar field; zero is the default and is left out, as proto3 does. */
static void pb_int(struct pbuf *b, int field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

static void pb_bytes(struct pbuf *b, int field, const void *p, size_t len)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, len);
	pb_raw(b, p, len);
}

/* Append sub as a nested message and empty it for reuse. */
static void pb_msg(struct pbuf *b, int field, struct pbuf *sub)
{
	pb_bytes(b, field, sub->d, sub->n);
	b->oom |= sub->oom;
	sub->n = 0;
}

static void pb_packed(struct pbuf *b, int field, const uint64_t *v, size_t n)
{
	struct pbuf p = { 0 };

	for (size_t i = 0; i < n; i++)
		pb_varint(&p, v[i]);
	pb_msg(b, field, &p);
	free(p.d);
}

/*
 * The message goes to gzip as it is made: fields are written to a small
 * buffer that is deflated whenever it passes 64 KiB, so the output never
 * sits whole in memory, nor twice (issue 19 item 7).  Fields of a message
 * may come in any order, repeated ones add up: samples, locations and
 * functions as they are met, mappings after them (their flags are known
 * then), the string table last.
 */
struct zout {
	FILE *f;
	z_stream z;
	bool started;
	int err;
	uint8_t chunk[65536];
};

static void zout_feed(struct zout *o, struct pbuf *b, int flush)
{
	if (b->oom)
		o->err = -1;
	if (o->err || !o->started)
		return;
	o->z.next_in = b->d;
	o->z.avail_in = b->n;
	int zr;
	do {
		o->z.next_out = o->chunk;
		o->z.avail_out = sizeof(o->chunk);
		zr = deflate(&o->z, flush);
		size_t len = sizeof(o->chunk) - o->z.avail_out;
		if (zr == Z_STREAM_ERROR || fwrite(o->chunk, 1, len, o->f) != len) {
			o->err = -1;
			break;
		}
	} while (o->z.avail_out == 0 || (flush == Z_FINISH && zr == Z_OK));
	if (flush == Z_FINISH && zr != Z_STREAM_END)
		o->err = -1;
	b->n = 0;
}

/* Deflate what the buffer holds once it is big enough to be worth a call. */
static void zout_maybe(struct zout *o, struct pbuf *b)
{
	if (b->n >= 65536 || b->oom)
		zout_feed(o, b, Z_NO_FLUSH);
}

/*
 * The string table: index 0 is "", every string once, each a copy: names
 * are built in reused buffers (an unsymbolized frame's "0x..." name).
 */
struct strtab {
	char **s;
	size_t n, cap;
	size_t *slot;
	size_t mask;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
	return h;
}

static int64_t str_index(struct strtab *t, const char *s)
{
	if (!s || !*s)
		return 0;
	if (!t->n) {
		t->cap = 1024;
		if (!(t->s = malloc(t->cap * sizeof(*t->s))) || !(t->s[0] = strdup(""))) {
			free(t->s);
			t->s = NULL;
			return 0;
		}
		t->n = 1;
	}
	if (2 * (t->n + 1) > t->mask + 1) {
		size_t cap = t->mask ? 2 * (t->mask + 1) : 1024;
		size_t *slot = calloc(cap, sizeof(*slot));
		if (!slot)
			return 0;
		for (size_t i = 1; i < t->n; i++) {
			size_t k = hash_str(t->s[i]) & (cap - 1);
			while (slot[k])
				k = (k + 1) & (cap - 1);
			slot[k] = i;
		}
		free(t->slot);
		t->slot = slot;
		t->mask = cap - 1;
	}
	size_t k = hash_str(s) & t->mask;
	for (; t->slot[k]; k = (k + 1) & t->mask)
		if (!strcmp(t->s[t->slot[k]], s))
			return t->slot[k];
	if (ARRAY_RESERVE(t->s, t->cap, t->n + 1, 1024))
		return 0;
	if (!(t->s[t->n] = strdup(s)))
		return 0;
	t->slot[k] = t->n;
	return t->n++;
}

struct mapping {
	uint64_t start, limit, offset;
	char *path;
	char build_id[2 * 64 + 1];
	bool functions, filenames, lines, inlines;
};

/* Executable file mappings of the maps text, with their build IDs. */
static struct mapping *read_mappings(const char *maps, size_t *n)
{
	struct mapping *m = NULL;
	struct map_entry e;
	size_t cap = 0;

	*n = 0;
	for (const char *pos = maps; maps_next(&pos, &e);) {
		if (e.perms[2] != 'x' || e.path[0] != '/')
			continue;
		if (ARRAY_RESERVE(m, cap, *n + 1, 32))
			break;
		struct mapping *x = &m[(*n)++];
		memset(x, 0, sizeof(*x));
		x->start = e.lo;
		x->limit = e.hi;
		x->offset = e.offset;
		x->path = strdup(e.path);
		struct elfobj o;
		uint8_t id[64];
		if (x->path && !elfobj_open(&o, x->path, false)) {
			size_t len = elfobj_build_id(&o, id, sizeof(id));
			for (size_t i = 0; i < len; i++)
				snprintf(x->build_id + 2 * i, 3, "%02x", id[i]);
			elfobj_close(&o);
		}
	}
	return m;
}

static size_t mapping_of(const struct mapping *m, size_t n, uint64_t pc)
{
	for (size_t i = 0; i < n; i++)
		if (pc >= m[i].start && pc < m[i].limit)
			return i + 1;
	return 0;
}

/*
 * Locations and functions, each once, keyed by pc and by (name, system name,
 * file).  12 bytes a slot, filled to 3/4: a profile of millions of distinct
 * addresses costs ~16 bytes for each here, ~24 while the table doubles.
 * The slot comes from the hash's high bits: pcs that are multiples of 16
 * would leave most slots out of reach of the low ones.
 */
struct ids {
	uint64_t *key;
	uint32_t *id;
	size_t mask, n;
	int shift;
};

static size_t id_hash(const struct ids *t, uint64_t key)
{
	return (key * 0x9e3779b97f4a7c15ull) >> t->shift;
}

static uint32_t *id_slot(struct ids *t, uint64_t key, bool *fresh)
{
	if (4 * (t->n + 1) > 3 * (t->mask + 1)) {
		struct ids g = { .mask = t->mask ? 2 * t->mask + 1 : 4095, .n = t->n, .shift = t->mask ? t->shift - 1 : 64 - 12 };
		g.key = calloc(g.mask + 1, sizeof(*g.key));
		g.id = calloc(g.mask + 1, sizeof(*g.id));
		if (!g.key || !g.id || t->n >= UINT32_MAX - 1) {
			free(g.key);
			free(g.id);
			return NULL;
		}
		for (size_t i = 0; t->mask && i <= t->mask; i++) {
			if (!t->id[i])
				continue;
			size_t j = id_hash(&g, t->key[i]);
			while (g.id[j])
				j = (j + 1) & g.mask;
			g.key[j] = t->key[i];
			g.id[j] = t->id[i];
		}
		free(t->key);
		free(t->id);
		*t = g;
	}
	size_t j = id_hash(t, key);
	for (; t->id[j]; j = (j + 1) & t->mask)
		if (t->key[j] == key) {
			*fresh = false;
			return &t->id[j];
		}
	t->key[j] = key;
	t->id[j] = ++t->n;
	*fresh = true;
	return &t->id[j];
}

static void ids_free(struct ids *t)
{
	free(t->key);
	free(t->id);
}

/* Frames in no module that still get a name of their own ("[0x...]"); see output_pprof_proto. */
#define UNKNOWN_NAMED 65536

int output_pprof_proto(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value dflt, size_t top)
{
	size_t unknown_named = 0;
	(void)top;
	struct pbuf out = { 0 }, m = { 0 }, sub = { 0 };
	struct strtab st = { 0 };
	struct ids loc_ids = { 0 }, fn_ids = { 0 };
	size_t nmap;
	struct mapping *maps = read_mappings(p->maps, &nmap);
	static const char *const types[] = { "alloc_objects", "alloc_space", "inuse_objects", "inuse_space" };
	static const char *const units[] = { "count", "bytes", "count", "bytes" };
	char *comments[5] = { 0 };
	struct zout *zo = calloc(1, sizeof(*zo));
	int err = 0;

	/* gzip, as pprof and the profilers that scrape /debug/pprof expect. */
	if (!zo || deflateInit2(&zo->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		err = -1;
		goto done;
	}
	zo->f = f;
	zo->started = true;

	for (int i = 0; i < 4; i++) {
		pb_int(&sub, 1, str_index(&st, types[i]));
		pb_int(&sub, 2, str_index(&st, units[i]));
		pb_msg(&out, 1, &sub);
	}

	for (size_t k = 0; k < p->n; k++) {
		const struct prof_stack *s = &p->stacks[k];
		uint64_t loc[HT_MAX_STACK_DEPTH + 1];
		size_t nloc = 0;

		for (uint32_t i = 0; i < s->depth && nloc < HT_MAX_STACK_DEPTH; i++) {
			bool fresh;
			uint32_t *id = id_slot(&loc_ids, s->pcs[i], &fresh);
			if (!id) {
				err = -1;
				goto done;
			}
			loc[nloc++] = *id;
			if (!fresh)
				continue;
			/* A new location: pc - 1 lands on the call, as pprof expects of return addresses. */
			const struct sym_frame *fr;
			int n = sym_lookup(sym, s->pcs[i], true, &fr);
			size_t mi = mapping_of(maps, nmap, s->pcs[i]);
			pb_int(&m, 1, *id);
			pb_int(&m, 2, mi);
			pb_int(&m, 3, s->pcs[i] - 1);
			/*
			 * A pc in no module of the profile (JIT code, a bad unwind)
			 * is named by its address, "[0x...]", one Function each, as
			 * pprof shows it at function granularity.  Past
			 * UNKNOWN_NAMED of them (a profile of made-up addresses,
			 * heaptrace diff's hostile input) the Location holds its
			 * address alone: no Line, no Function, no string, so that
			 * memory stays bounded; pprof shows those as <unknown>.
			 */
			if (n == 1 && !fr[0].func && !fr[0].module && !fr[0].file && unknown_named++ >= UNKNOWN_NAMED)
				n = 0;
			for (int l = 0; l < n; l++) {
				char name[256];
				const char *fname = fr[l].func ? fr[l].func : sym_frame_name(&fr[l], s->pcs[i], name, sizeof(name));
				int64_t nidx = str_index(&st, fname), sidx = str_index(&st, fr[l].system ? fr[l].system : fname),
					fidx = str_index(&st, fr[l].file);
				uint64_t fkey = (uint64_t)nidx * 0x9e3779b97f4a7c15ull ^ (uint64_t)sidx * 0xc2b2ae3d27d4eb4full ^
						(uint64_t)fidx * 0x165667b19e3779f9ull;
				uint32_t *fid = id_slot(&fn_ids, fkey ? fkey : 1, &fresh);
				if (!fid) {
					err = -1;
					goto done;
				}
				if (fresh) {
					pb_int(&sub, 1, *fid);
					pb_int(&sub, 2, nidx);
					pb_int(&sub, 3, sidx);
					pb_int(&sub, 4, fidx);
					pb_msg(&out, 5, &sub);
				}
				pb_int(&sub, 1, *fid);
				pb_int(&sub, 2, fr[l].line);
				pb_msg(&m, 4, &sub);
				if (mi) {
					maps[mi - 1].functions |= fr[l].func != NULL;
					maps[mi - 1].filenames |= fr[l].file != NULL;
					maps[mi - 1].lines |= fr[l].line > 0;
					maps[mi - 1].inlines |= n > 1;
				}
			}
			pb_msg(&out, 4, &m);
		}
		uint64_t vals[4] = { s->c.alloc_objects, s->c.alloc_bytes, (uint64_t)s->c.inuse_objects,
				     (uint64_t)s->c.inuse_bytes };
		pb_packed(&sub, 1, loc, nloc);
		pb_packed(&sub, 2, vals, 4);
		if (s->pid) {
			/* --merge: the process, as a numeric label (pprof -tagfocus pid=N, -tags). */
			struct pbuf lab = { 0 };
			pb_int(&lab, 1, str_index(&st, "pid"));
			pb_int(&lab, 3, (uint64_t)s->pid);
			pb_msg(&sub, 3, &lab);
			free(lab.d);
		}
		pb_msg(&out, 2, &sub);
		zout_maybe(zo, &out);
		if (zo->err) {
			err = -1;
			goto done;
		}
	}
	for (size_t i = 0; i < nmap; i++) {
		pb_int(&m, 1, i + 1);
		pb_int(&m, 2, maps[i].start);
		pb_int(&m, 3, maps[i].limit);
		pb_int(&m, 4, maps[i].offset);
		pb_int(&m, 5, str_index(&st, maps[i].path));
		pb_int(&m, 6, str_index(&st, maps[i].build_id));
		pb_int(&m, 7, maps[i].functions);
		pb_int(&m, 8, maps[i].filenames);
		pb_int(&m, 9, maps[i].lines);
		pb_int(&m, 10, maps[i].inlines);
		pb_msg(&out, 3, &m);
		zout_maybe(zo, &out);
	}
	/* The tables are done with: their memory goes back before the strings are written. */
	ids_free(&loc_ids);
	ids_free(&fn_ids);
	loc_ids = (struct ids){ 0 };
	fn_ids = (struct ids){ 0 };

	/* Comments: who wrote this, for what, and what was lost. */
	char losses[1024];
	int64_t cidx[5];
	int ncomments = 3;
	output_losses(losses, sizeof(losses), p->counters, true);
	if (asprintf(&comments[0], "heaptrace %s", HEAPTRACE_VERSION) < 0 ||
	    asprintf(&comments[1], "command: %s", p->command ? p->command : "?") < 0 ||
	    asprintf(&comments[2], "events: %s", losses) < 0 ||
	    (p->sample_rate &&
	     asprintf(&comments[ncomments++], "sampled: one allocation per %" PRIu64 " bytes on average; values are estimates",
		      p->sample_rate) < 0) ||
	    /* pprof's "File:" is the executable's mapping, the real file: the name the user knows, beside it. */
	    (p->name && asprintf(&comments[ncomments++], "program: %s", p->name) < 0)) {
		err = -1;
		goto done;
	}
	for (int i = 0; i < ncomments; i++)
		cidx[i] = str_index(&st, comments[i]);

	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	pb_int(&out, 9, now.tv_sec * 1000000000ull + now.tv_nsec);
	pb_int(&out, 10, p->now_ns > p->start_ns && p->start_ns ? p->now_ns - p->start_ns : 0);
	pb_int(&sub, 1, str_index(&st, "space"));
	pb_int(&sub, 2, str_index(&st, "bytes"));
	pb_msg(&out, 11, &sub);
	pb_int(&out, 12, 1);
	for (int i = 0; i < ncomments; i++)
		pb_int(&out, 13, cidx[i]);
	pb_int(&out, 14, str_index(&st, dflt == V_ALLOC_SPACE ? "alloc_space" :
					dflt == V_ALLOC_OBJECTS ? "alloc_objects" :
					dflt == V_INUSE_OBJECTS ? "inuse_objects" : "inuse_space"));
	for (size_t i = 0; i < st.n; i++) {
		pb_bytes(&out, 6, st.s[i], strlen(st.s[i]));
		zout_maybe(zo, &out);
	}
	if (out.oom || m.oom || sub.oom) {
		err = -1;
		goto done;
	}
	zout_feed(zo, &out, Z_FINISH);
	if (zo->err)
		err = -1;
done:
	if (zo && zo->started)
		deflateEnd(&zo->z);
	free(zo);
	for (int i = 0; i < 5; i++)
		free(comments[i]);
	for (size_t i = 0; i < nmap; i++)
		free(maps[i].path);
	free(maps);
	free(out.d);
	free(m.d);
	free(sub.d);
	for (size_t i = 0; i < st.n; i++)
		free(st.s[i]);
	free(st.s);
	free(st.slot);
	ids_free(&loc_ids);
	ids_free(&fn_ids);
	return err;
}
