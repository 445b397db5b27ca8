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
#include "output/writers.h"
#include "profile/pprof.h"
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
	/* An empty nested message (all its fields 0) is no bytes: memcpy may not be given its NULL buffer. */
	if (b->oom || !len)
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
	pb_varint(b, (uint64_t)field << 3 | PB_VARINT);
	pb_varint(b, v);
}

static void pb_bytes(struct pbuf *b, int field, const void *p, size_t len)
{
	pb_varint(b, (uint64_t)field << 3 | PB_LEN);
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

/* Frames in no module that still get a name of their own ("[0x...]"); see write_lines. */
#define UNKNOWN_NAMED 65536

/* One profile being written: its tables, and the buffers messages are built in. */
struct writer {
	const struct profile *p;
	struct symbolizer *sym;
	struct zout *zo;
	struct pbuf out;                /* the Profile's fields, deflated as they come */
	struct pbuf m, sub;             /* a message being built, and one inside it */
	struct strtab st;
	struct ids loc_ids, fn_ids;
	struct mapping *maps;
	size_t nmap;
	size_t unknown_named;
};

static void write_sample_types(struct writer *w)
{
	static const char *const types[] = PPROF_SAMPLE_TYPES, *const units[] = PPROF_SAMPLE_UNITS;

	for (int i = 0; i < PPROF_N_SAMPLE_TYPES; i++) {
		pb_int(&w->sub, PPROF_VALUETYPE_TYPE, str_index(&w->st, types[i]));
		pb_int(&w->sub, PPROF_VALUETYPE_UNIT, str_index(&w->st, units[i]));
		pb_msg(&w->out, PPROF_PROFILE_SAMPLE_TYPE, &w->sub);
	}
}

/* The Function of frame fr (written when first met): its id, 0 when out of memory. */
static uint32_t function_id(struct writer *w, const struct sym_frame *fr, uint64_t pc)
{
	char name[256];
	const char *fname = fr->func ? fr->func : sym_frame_name(fr, pc, name, sizeof(name));
	int64_t nidx = str_index(&w->st, fname), sidx = str_index(&w->st, fr->system ? fr->system : fname),
		fidx = str_index(&w->st, fr->file);
	uint64_t fkey = (uint64_t)nidx * 0x9e3779b97f4a7c15ull ^ (uint64_t)sidx * 0xc2b2ae3d27d4eb4full ^
			(uint64_t)fidx * 0x165667b19e3779f9ull;
	bool fresh;
	uint32_t *fid = id_slot(&w->fn_ids, fkey ? fkey : 1, &fresh);

	if (!fid)
		return 0;
	if (fresh) {
		pb_int(&w->sub, PPROF_FUNCTION_ID, *fid);
		pb_int(&w->sub, PPROF_FUNCTION_NAME, nidx);
		pb_int(&w->sub, PPROF_FUNCTION_SYSTEM_NAME, sidx);
		pb_int(&w->sub, PPROF_FUNCTION_FILENAME, fidx);
		pb_msg(&w->out, PPROF_PROFILE_FUNCTION, &w->sub);
	}
	return *fid;
}

/* A new Location's Lines (its frames, inline ones first) into w->m; mi: its mapping's id, 0 for none. */
static int write_lines(struct writer *w, uint64_t pc, size_t mi)
{
	const struct sym_frame *fr;
	int n = sym_lookup(w->sym, pc, true, &fr);

	/*
	 * A pc in no module of the profile (JIT code, a bad unwind) is named
	 * by its address, "[0x...]", one Function each, as pprof shows it at
	 * function granularity.  Past UNKNOWN_NAMED of them (a profile of
	 * made-up addresses, heaptrace diff's hostile input) the Location
	 * holds its address alone: no Line, no Function, no string, so that
	 * memory stays bounded; pprof shows those as <unknown>.
	 */
	if (n == 1 && !fr[0].func && !fr[0].module && !fr[0].file && w->unknown_named++ >= UNKNOWN_NAMED)
		n = 0;
	for (int l = 0; l < n; l++) {
		uint32_t fid = function_id(w, &fr[l], pc);

		if (!fid)
			return -1;
		pb_int(&w->sub, PPROF_LINE_FUNCTION_ID, fid);
		pb_int(&w->sub, PPROF_LINE_LINE, fr[l].line);
		pb_msg(&w->m, PPROF_LOCATION_LINE, &w->sub);
		if (mi) {
			struct mapping *map = &w->maps[mi - 1];

			map->functions |= fr[l].func != NULL;
			map->filenames |= fr[l].file != NULL;
			map->lines |= fr[l].line > 0;
			map->inlines |= n > 1;
		}
	}
	return 0;
}

/* The Location of pc, written when first met: its id into *id; -1 when out of memory. */
static int location_id(struct writer *w, uint64_t pc, uint64_t *id)
{
	bool fresh;
	uint32_t *slot = id_slot(&w->loc_ids, pc, &fresh);

	if (!slot)
		return -1;
	*id = *slot;
	if (!fresh)
		return 0;
	/* pc - 1 lands on the call, as pprof expects of return addresses. */
	size_t mi = mapping_of(w->maps, w->nmap, pc);
	pb_int(&w->m, PPROF_LOCATION_ID, *slot);
	pb_int(&w->m, PPROF_LOCATION_MAPPING_ID, mi);
	pb_int(&w->m, PPROF_LOCATION_ADDRESS, pc - 1);
	if (write_lines(w, pc, mi))
		return -1;
	pb_msg(&w->out, PPROF_PROFILE_LOCATION, &w->m);
	return 0;
}

/* One stack's Sample, after the Locations and Functions it is the first to use. */
/* --merge: the program a process of the tree runs (the target's is the profile's name), or NULL. */
static const char *program_of(const struct profile *p, pid_t pid)
{
	if (pid == p->pid)
		return p->name;
	for (size_t i = 0; i < p->n_programs; i++)
		if (p->programs[i].pid == pid)
			return p->programs[i].name;
	return NULL;
}

static int write_sample(struct writer *w, const struct prof_stack *s)
{
	uint64_t loc[HT_MAX_STACK_DEPTH + 1];
	size_t nloc = 0;

	for (uint32_t i = 0; i < s->depth && nloc < HT_MAX_STACK_DEPTH; i++)
		if (location_id(w, s->pcs[i], &loc[nloc++]))
			return -1;
	/* In the order of PPROF_SAMPLE_TYPES. */
	uint64_t vals[PPROF_N_SAMPLE_TYPES] = { s->c.alloc_objects, s->c.alloc_bytes, (uint64_t)s->c.inuse_objects,
						(uint64_t)s->c.inuse_bytes, s->c.realloc_objects, s->c.realloc_bytes };
	pb_packed(&w->sub, PPROF_SAMPLE_LOCATION_ID, loc, nloc);
	pb_packed(&w->sub, PPROF_SAMPLE_VALUE, vals, PPROF_N_SAMPLE_TYPES);
	if (s->pid) {
		/* --merge: the process, as a numeric label (pprof -tagfocus pid=N, -tags). */
		struct pbuf lab = { 0 };
		pb_int(&lab, PPROF_LABEL_KEY, str_index(&w->st, "pid"));
		pb_int(&lab, PPROF_LABEL_NUM, (uint64_t)s->pid);
		pb_msg(&w->sub, PPROF_SAMPLE_LABEL, &lab);
		lab.n = 0;
		/* Its program beside it, a string label (pprof -tagfocus program=postgres). */
		const char *prog = program_of(w->p, s->pid);
		if (prog) {
			pb_int(&lab, PPROF_LABEL_KEY, str_index(&w->st, "program"));
			pb_int(&lab, PPROF_LABEL_STR, str_index(&w->st, prog));
			pb_msg(&w->sub, PPROF_SAMPLE_LABEL, &lab);
		}
		free(lab.d);
	}
	pb_msg(&w->out, PPROF_PROFILE_SAMPLE, &w->sub);
	zout_maybe(w->zo, &w->out);
	return w->zo->err;
}

/*
 * Python frames (HT_PY_FRAME) in a mapping of their own, "[python]", whose
 * functions, files and lines the profile holds: pprof takes a location of
 * no mapping for one to symbolize, and shows <unknown> for it.
 */
static void add_python_mapping(struct writer *w)
{
	size_t cap = w->nmap;
	bool any = false;

	for (size_t i = 0; i < w->p->n && !any; i++)
		for (uint32_t d = 0; d < w->p->stacks[i].depth && !any; d++)
			any = ht_pc_python(w->p->stacks[i].pcs[d]);
	if (!any || ARRAY_RESERVE(w->maps, cap, w->nmap + 1, 1))
		return;
	struct mapping *x = &w->maps[w->nmap++];
	memset(x, 0, sizeof(*x));
	x->start = HT_PY_FRAME;
	x->limit = HT_PC_KIND_BASE;
	x->path = strdup("[python]");
}

/* After the samples: only then are the mappings' has_* flags known. */
static void write_mappings(struct writer *w)
{
	for (size_t i = 0; i < w->nmap; i++) {
		const struct mapping *map = &w->maps[i];

		pb_int(&w->m, PPROF_MAPPING_ID, i + 1);
		pb_int(&w->m, PPROF_MAPPING_MEMORY_START, map->start);
		pb_int(&w->m, PPROF_MAPPING_MEMORY_LIMIT, map->limit);
		pb_int(&w->m, PPROF_MAPPING_FILE_OFFSET, map->offset);
		pb_int(&w->m, PPROF_MAPPING_FILENAME, str_index(&w->st, map->path));
		pb_int(&w->m, PPROF_MAPPING_BUILD_ID, str_index(&w->st, map->build_id));
		pb_int(&w->m, PPROF_MAPPING_HAS_FUNCTIONS, map->functions);
		pb_int(&w->m, PPROF_MAPPING_HAS_FILENAMES, map->filenames);
		pb_int(&w->m, PPROF_MAPPING_HAS_LINE_NUMBERS, map->lines);
		pb_int(&w->m, PPROF_MAPPING_HAS_INLINE_FRAMES, map->inlines);
		pb_msg(&w->out, PPROF_PROFILE_MAPPING, &w->m);
		zout_maybe(w->zo, &w->out);
	}
}

/* Comments: who wrote this, for what, and what was lost.  -1 when out of memory. */
static int write_comments(struct writer *w)
{
	const struct profile *p = w->p;
	/* Three always, then sampled, program, rss, suppressed, and room for more. */
	char losses[1024], *comments[10] = { 0 };
	int64_t cidx[10];
	int ncomments = 3, err = 0;

	output_losses(losses, sizeof(losses), p->counters, true);
	if (asprintf(&comments[0], "heaptrace %s", HEAPTRACE_VERSION) < 0 ||
	    asprintf(&comments[1], "command: %s", p->command ? p->command : "?") < 0 ||
	    asprintf(&comments[2], "events: %s", losses) < 0 ||
	    (p->sample_rate &&
	     asprintf(&comments[ncomments++], "sampled: one allocation per %" PRIu64 " bytes on average; values are estimates",
		      p->sample_rate) < 0) ||
	    /* pprof's "File:" is the executable's mapping, the real file: the name the user knows, beside it. */
	    (p->name && asprintf(&comments[ncomments++], "program: %s", p->name) < 0) ||
	    /* The heap beside what the kernel counts (what an OOM kill goes by). */
	    (!p->is_diff && p->rss.known &&
	     asprintf(&comments[ncomments++],
		      "rss: %" PRIu64 " bytes%s (anon %" PRIu64 ", file %" PRIu64 ", shmem %" PRIu64
		      "; heaptrace's own mappings %" PRIu64 " of it)",
		      rss_total(&p->rss), p->rss.last ? " at exit" : "", p->rss.anon, p->rss.file, p->rss.shmem,
		      p->rss.own) < 0) ||
	    /* --suppressions: what left the leak views, said where the profile goes too. */
	    (p->suppressed.stacks &&
	     asprintf(&comments[ncomments++], "suppressed: %" PRIu64 " bytes in %" PRIu64 " blocks of %" PRIu64
		      " stacks (--suppressions: not leaks)", p->suppressed.bytes, p->suppressed.objects,
		      p->suppressed.stacks) < 0) ||
	    (p->counters[HT_OOM_KILLS] &&
	     asprintf(&comments[ncomments++], "oom: killed by the kernel's OOM killer; the heap at the kill") < 0)) {
		err = -1;
		goto out;
	}
	/* Indexed before the fields that follow them are written: the string table's order is kept. */
	for (int i = 0; i < ncomments; i++)
		cidx[i] = str_index(&w->st, comments[i]);

	/* A diff is no moment in time: without one, `heaptrace diff -f proto` is the same bytes every run. */
	if (!p->is_diff) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		pb_int(&w->out, PPROF_PROFILE_TIME_NANOS, now.tv_sec * 1000000000ull + now.tv_nsec);
	}
	pb_int(&w->out, PPROF_PROFILE_DURATION_NANOS,
	       p->now_ns > p->start_ns && p->start_ns ? p->now_ns - p->start_ns : 0);
	pb_int(&w->sub, PPROF_VALUETYPE_TYPE, str_index(&w->st, "space"));
	pb_int(&w->sub, PPROF_VALUETYPE_UNIT, str_index(&w->st, "bytes"));
	pb_msg(&w->out, PPROF_PROFILE_PERIOD_TYPE, &w->sub);
	pb_int(&w->out, PPROF_PROFILE_PERIOD, 1);
	for (int i = 0; i < ncomments; i++)
		pb_int(&w->out, PPROF_PROFILE_COMMENT, cidx[i]);
out:
	for (size_t i = 0; i < sizeof(comments) / sizeof(comments[0]); i++)
		free(comments[i]);
	return err;
}

static void write_strings(struct writer *w)
{
	for (size_t i = 0; i < w->st.n; i++) {
		pb_bytes(&w->out, PPROF_PROFILE_STRING_TABLE, w->st.s[i], strlen(w->st.s[i]));
		zout_maybe(w->zo, &w->out);
	}
}

static void writer_free(struct writer *w)
{
	if (w->zo && w->zo->started)
		deflateEnd(&w->zo->z);
	free(w->zo);
	for (size_t i = 0; i < w->nmap; i++)
		free(w->maps[i].path);
	free(w->maps);
	free(w->out.d);
	free(w->m.d);
	free(w->sub.d);
	for (size_t i = 0; i < w->st.n; i++)
		free(w->st.s[i]);
	free(w->st.s);
	free(w->st.slot);
	ids_free(&w->loc_ids);
	ids_free(&w->fn_ids);
}

int output_pprof_proto(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value dflt, size_t top)
{
	struct writer w = { .p = p, .sym = sym, .zo = calloc(1, sizeof(*w.zo)) };
	int err = -1;
	(void)top;

	w.maps = read_mappings(p->maps, &w.nmap);
	add_python_mapping(&w);
	/* gzip, as pprof and the profilers that scrape /debug/pprof expect. */
	if (!w.zo || deflateInit2(&w.zo->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		goto done;
	w.zo->f = f;
	w.zo->started = true;
	write_sample_types(&w);
	for (size_t k = 0; k < p->n; k++)
		if (write_sample(&w, &p->stacks[k]))
			goto done;
	write_mappings(&w);
	/* The tables are done with: their memory goes back before the strings are written. */
	ids_free(&w.loc_ids);
	ids_free(&w.fn_ids);
	w.loc_ids = w.fn_ids = (struct ids){ 0 };
	if (write_comments(&w))
		goto done;
	pb_int(&w.out, PPROF_PROFILE_DEFAULT_SAMPLE_TYPE,
	       str_index(&w.st, value_name(dflt)));
	write_strings(&w);
	if (w.out.oom || w.m.oom || w.sub.oom)
		goto done;
	zout_feed(w.zo, &w.out, Z_FINISH);
	err = w.zo->err ? -1 : 0;
done:
	writer_free(&w);
	return err;
}
