/* Reading a gzipped pprof protobuf back, for `heaptrace diff` of -f proto snapshots. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util/array.h"
#include "util/log.h"
#include "profile/pprof.h"
#include "symbolize/pyframes.h"
#include "profile/profile.h"

struct pb {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t varint(struct pb *b)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end) {
			b->bad = true;
			return 0;
		}
		uint8_t c = *b->p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	b->bad = true;
	return 0;
}

/* Next field: its number, wire type, and (length-delimited) its contents in *sub. */
static bool field(struct pb *b, int *num, int *wt, uint64_t *v, struct pb *sub)
{
	if (b->p >= b->end || b->bad)
		return false;
	uint64_t key = varint(b);
	*num = key >> 3;
	*wt = key & 7;
	switch (*wt) {
	case PB_VARINT:
		*v = varint(b);
		break;
	case PB_I64:
		if (b->end - b->p < 8)
			b->bad = true;
		else
			memcpy(v, b->p, 8), b->p += 8;
		break;
	case PB_LEN: {
		uint64_t len = varint(b);
		if ((uint64_t)(b->end - b->p) < len) {
			b->bad = true;
			break;
		}
		sub->p = b->p;
		sub->end = b->p + len;
		sub->bad = false;
		b->p += len;
		break;
	}
	case PB_I32:
		if (b->end - b->p < 4)
			b->bad = true;
		else
			b->p += 4;
		break;
	default:
		b->bad = true;
	}
	return !b->bad;
}

/* A repeated integer field, packed or not. */
static int repeated(uint64_t **arr, size_t *n, size_t *cap, int wt, uint64_t v, struct pb *sub)
{
	for (;;) {
		uint64_t x;
		if (wt == PB_VARINT)
			x = v;
		else if (sub->p < sub->end)
			x = varint(sub);
		else
			break;
		if (ARRAY_RESERVE(*arr, *cap, *n + 1, 16))
			return -1;
		(*arr)[(*n)++] = x;
		if (wt == PB_VARINT)
			break;
	}
	return sub->bad ? -1 : 0;
}

/*
 * A profile.proto starts with a tag of one of its fields (1 to 14, varint
 * or length-delimited).  Checked on the first bytes inflated, so that a
 * gzip bomb of zeros is turned away before it costs memory.
 */
static bool proto_start(const uint8_t *d, size_t n)
{
	unsigned num = n ? d[0] >> 3 : 0, wt = n ? d[0] & 7 : 7;

	return n && !(d[0] & 0x80) && num >= PPROF_PROFILE_SAMPLE_TYPE && num <= PPROF_PROFILE_DEFAULT_SAMPLE_TYPE &&
	       (wt == PB_VARINT || wt == PB_LEN);
}

/*
 * Inflated size is bounded twice: absolutely (PROFILE_MAX_BYTES) and
 * relative to the input.  heaptrace's own profiles inflate about 3 to 10
 * times; 64 times plus 1 MiB leaves room for any real profile.
 */
static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len, const char **why)
{
	z_stream z = { 0 };
	size_t cap = len * 4 + 4096, n = 0, max = len * 64 + (1 << 20);
	uint8_t *out;
	int r = Z_OK;

	if (max > PROFILE_MAX_BYTES)
		max = PROFILE_MAX_BYTES;
	*why = "not a gzipped profile";
	if (!(out = malloc(cap)) || inflateInit2(&z, 15 + 32) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (uint8_t *)in;
	z.avail_in = len;
	do {
		if (n == cap) {
			if (cap >= max) {
				*why = "inflates to more than a real profile could (a gzip bomb?)";
				r = Z_MEM_ERROR;
				break;
			}
			cap = cap * 2 < max ? cap * 2 : max;
			uint8_t *g = realloc(out, cap);
			if (!g)
				break;
			out = g;
		}
		z.next_out = out + n;
		z.avail_out = cap - n;
		r = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
		if (n && !proto_start(out, n)) {
			*why = "gzip, but not a profile.proto inside";
			r = Z_DATA_ERROR;
			break;
		}
	} while (r == Z_OK);
	inflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	*out_len = n;
	return out;
}

struct loc {
	uint64_t id, address;
	uint64_t fn, line;      /* its innermost Line's Function id and line: a Python frame's names */
};

struct func {
	uint64_t id, name, file;        /* string indices */
	/* A Python code's (python_locations()): its first line + 1 (0: unknown), the index last defined and its first line. */
	uint64_t first1, index;
	int index_first;
};

/* What the first pass collects: the string table, the sample types' names, the locations' addresses. */
struct tables {
	char **strs;
	size_t nstr, capstr;
	uint64_t types[8];
	int ntypes;
	struct loc *locs;
	size_t nloc, caploc;
	struct func *funcs;
	size_t nfunc, capfunc;
};

static void tables_free(struct tables *t)
{
	for (size_t i = 0; i < t->nstr; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->locs);
	free(t->funcs);
}

static struct loc read_location(struct pb *sub)
{
	struct loc l = { 0 };
	struct pb s2;
	int num, wt;
	uint64_t v;

	bool lined = false;

	while (field(sub, &num, &wt, &v, &s2)) {
		if (num == PPROF_LOCATION_ID)
			l.id = v;
		else if (num == PPROF_LOCATION_ADDRESS)
			l.address = v;
		else if (num == PPROF_LOCATION_LINE && wt == PB_LEN && !lined) {
			struct pb s3;
			int n3, w3;
			uint64_t v3;
			lined = true;
			while (field(&s2, &n3, &w3, &v3, &s3))
				if (n3 == PPROF_LINE_FUNCTION_ID)
					l.fn = v3;
				else if (n3 == PPROF_LINE_LINE)
					l.line = v3;
		}
	}
	return l;
}

static struct func read_function(struct pb *sub)
{
	struct func f = { 0 };
	struct pb s2;
	int num, wt;
	uint64_t v;

	while (field(sub, &num, &wt, &v, &s2))
		if (num == PPROF_FUNCTION_ID)
			f.id = v;
		else if (num == PPROF_FUNCTION_NAME)
			f.name = v;
		else if (num == PPROF_FUNCTION_FILENAME)
			f.file = v;
	return f;
}

static int cmp_func(const void *a, const void *b)
{
	uint64_t x = ((const struct func *)a)->id, y = ((const struct func *)b)->id;

	return x < y ? -1 : x > y;
}

/* The Function a Location's Line names, or NULL. */
static struct func *func_of(struct tables *t, uint64_t id)
{
	struct func key = { .id = id };

	return id && t->nfunc ? bsearch(&key, t->funcs, t->nfunc, sizeof(*t->funcs), cmp_func) : NULL;
}

/* A Python frame's location: its code's first line, from its Line's less the word's distance; false when unknown. */
static bool first_line(const struct loc *l, int *first)
{
	uint64_t rel = (l->address + 1) >> HT_PY_LINE_SHIFT & HT_PY_LINE_UNKNOWN;

	if (rel == HT_PY_LINE_UNKNOWN || l->line < rel || l->line - rel >= (1u << 30))
		return false;
	*first = (int)(l->line - rel);
	return true;
}

static bool python_location(const struct loc *l)
{
	return ht_pc_python(l->address + 1) && !ht_pc_py_ident(l->address + 1);
}

/*
 * The Python frames' locations (addresses in the [python] mapping: a
 * word of heaptrace's, output/pprof_proto.c) get this process's index for
 * their code, named by their Function (pycode.h): the writer's is its
 * own.  Its first line is the Line's less the word's distance from it;
 * where that distance is unknown, another Location's of the Function.  A
 * Function's code is defined once for its first line, not once per
 * Location.  A code that cannot be defined (out of memory, too many) is
 * unnamed, as one whose name was lost.
 */
static void python_locations(struct tables *t)
{
	int first;

	if (t->nfunc)
		qsort(t->funcs, t->nfunc, sizeof(*t->funcs), cmp_func);
	for (size_t i = 0; i < t->nloc; i++) {
		struct func *f;
		if (python_location(&t->locs[i]) && first_line(&t->locs[i], &first) && (f = func_of(t, t->locs[i].fn)))
			f->first1 = (uint64_t)first + 1;
	}
	for (size_t i = 0; i < t->nloc; i++) {
		uint64_t word = t->locs[i].address + 1, index = 0;
		if (!python_location(&t->locs[i]))
			continue;
		struct func *f = func_of(t, t->locs[i].fn);
		if (f && f->name < t->nstr && f->file < t->nstr && t->strs[f->name] && t->strs[f->file]) {
			if (!first_line(&t->locs[i], &first))
				first = f->first1 ? (int)(f->first1 - 1) : 0;
			if (!f->index || f->index_first != first) {
				f->index = pyf_define(t->strs[f->name], t->strs[f->file], first);
				f->index_first = first;
			}
			index = f->index;
		}
		t->locs[i].address = ((word & ~HT_PY_CODE_MASK) | index) - 1;
	}
}

/* Pass 1.  0, or -1: out of memory, or not a profile (said). */
static int read_tables(const uint8_t *data, size_t len, const char *path, struct tables *t)
{
	struct pb b = { data, data + len, false }, sub, s2;
	int num, wt, num2, wt2;
	uint64_t v, v2;

	while (field(&b, &num, &wt, &v, &sub)) {
		if (num == PPROF_PROFILE_STRING_TABLE && wt == PB_LEN) {
			if (ARRAY_RESERVE(t->strs, t->capstr, t->nstr + 1, 256))
				return -1;
			t->strs[t->nstr++] = strndup((const char *)sub.p, sub.end - sub.p);
		} else if (num == PPROF_PROFILE_SAMPLE_TYPE && wt == PB_LEN && t->ntypes < 8) {
			while (field(&sub, &num2, &wt2, &v2, &s2))
				if (num2 == PPROF_VALUETYPE_TYPE)
					t->types[t->ntypes] = v2;
			t->ntypes++;
		} else if (num == PPROF_PROFILE_LOCATION && wt == PB_LEN) {
			struct loc l = read_location(&sub);

			if (ARRAY_RESERVE(t->locs, t->caploc, t->nloc + 1, 1024))
				return -1;
			t->locs[t->nloc++] = l;
		} else if (num == PPROF_PROFILE_FUNCTION && wt == PB_LEN) {
			struct func f = read_function(&sub);

			if (ARRAY_RESERVE(t->funcs, t->capfunc, t->nfunc + 1, 1024))
				return -1;
			t->funcs[t->nfunc++] = f;
		}
	}
	if (b.bad) {
		ht_err("%s: not a pprof protobuf profile", path);
		return -1;
	}
	return 0;
}

/* Pass 2: the mappings as lines of a memory map into mf (they need the string table, which comes last). */
static void read_mappings(const uint8_t *data, size_t len, const struct tables *t, FILE *mf)
{
	struct pb b = { data, data + len, false }, sub, s2;
	int num, wt, num2, wt2, nmaps = 0;
	uint64_t v, v2;

	while (field(&b, &num, &wt, &v, &sub)) {
		if (num != PPROF_PROFILE_MAPPING || wt != PB_LEN)
			continue;
		uint64_t start = 0, limit = 0, off = 0, file = 0;
		while (field(&sub, &num2, &wt2, &v2, &s2)) {
			if (num2 == PPROF_MAPPING_MEMORY_START) start = v2;
			else if (num2 == PPROF_MAPPING_MEMORY_LIMIT) limit = v2;
			else if (num2 == PPROF_MAPPING_FILE_OFFSET) off = v2;
			else if (num2 == PPROF_MAPPING_FILENAME) file = v2;
		}
		/*
		 * libdwfl places a module by where its file offset 0 is mapped: the
		 * executable segment alone (offset 0x1000, say) would shift every
		 * symbol.  Objects map their segments contiguously, so offset 0 is
		 * at start - offset.  libdwfl takes inode 0 for anonymous memory and
		 * one inode for one file: number them (profile/rebase.c knows 00:01 for
		 * such numbers, no file identity).
		 */
		/* Not a file's: Python's frames, named by their Functions (python_locations()). */
		if (mf && file < t->nstr && t->strs[file] && start >= off && strcmp(t->strs[file], "[python]"))
			fprintf(mf, "%lx-%lx r-xp 00000000 00:01 %d %s\n", (unsigned long)(start - off),
				(unsigned long)limit, ++nmaps, t->strs[file]);
	}
}

/* Which of a Sample's values holds each of heaptrace's counters (PPROF_SAMPLE_TYPES' order); -1: none. */
static void value_columns(const struct tables *t, int col[PPROF_N_SAMPLE_TYPES])
{
	static const char *const names[PPROF_N_SAMPLE_TYPES] = PPROF_SAMPLE_TYPES;

	for (int k = 0; k < PPROF_N_SAMPLE_TYPES; k++)
		col[k] = -1;
	for (int i = 0; i < t->ntypes; i++)
		for (int k = 0; k < PPROF_N_SAMPLE_TYPES; k++)
			if (t->types[i] < t->nstr && t->strs[t->types[i]] && !strcmp(t->strs[t->types[i]], names[k]))
				col[k] = i;
}

/* The stack's pcs from its location ids. */
static void sample_pcs(struct prof_stack *s, const uint64_t *ids, size_t nid, const struct tables *t)
{
	for (size_t i = 0; s->pcs && i < nid; i++) {
		/* Locations hold return address - 1: back to what the text profile holds. */
		if (ids[i] - 1 < t->nloc && t->locs[ids[i] - 1].id == ids[i]) {
			/* ids are 1..n in order, as every writer numbers them: no search */
			s->pcs[s->depth++] = t->locs[ids[i] - 1].address + 1;
			continue;
		}
		for (size_t k = 0; k < t->nloc; k++)
			if (t->locs[k].id == ids[i]) {
				s->pcs[s->depth++] = t->locs[k].address + 1;
				break;
			}
	}
}

/* One Sample into a new stack of p (*cap: p->stacks' room).  0, or -1 (said when it is one too many). */
static int read_sample(struct pb *sub, const struct tables *t, const int *col, struct profile *p, size_t *cap,
		       const char *path)
{
	uint64_t *ids = NULL, *vals = NULL;
	size_t nid = 0, cid = 0, nval = 0, cval = 0;
	struct pb s2;
	int num, wt, err = -1;
	uint64_t v;

	while (field(sub, &num, &wt, &v, &s2)) {
		if (num == PPROF_SAMPLE_LOCATION_ID && repeated(&ids, &nid, &cid, wt, v, &s2))
			break;
		if (num == PPROF_SAMPLE_VALUE && repeated(&vals, &nval, &cval, wt, v, &s2))
			break;
	}
	if (p->n == PROFILE_MAX_RECORDS) {
		ht_err("%s: more than %u samples, more stacks than any profile heaptrace reads", path,
		       PROFILE_MAX_RECORDS);
		goto out;
	}
	if (ARRAY_RESERVE(p->stacks, *cap, p->n + 1, 256))
		goto out;
	struct prof_stack *s = &p->stacks[p->n++];
	memset(s, 0, sizeof(*s));
	s->pcs = malloc((nid ? nid : 1) * sizeof(uint64_t));
	sample_pcs(s, ids, nid, t);
	uint64_t val[PPROF_N_SAMPLE_TYPES] = { 0 };
	for (int k = 0; k < PPROF_N_SAMPLE_TYPES; k++)
		if (col[k] >= 0 && (size_t)col[k] < nval)
			val[k] = vals[col[k]];
	s->c.alloc_objects = val[0];
	s->c.alloc_bytes = val[1];
	s->c.inuse_objects = val[2];
	s->c.inuse_bytes = val[3];
	s->c.realloc_objects = val[4];
	s->c.realloc_bytes = val[5];
	err = 0;
out:
	free(ids);
	free(vals);
	return err;
}

/* Pass 3: the samples, each a stack of p.  0, or -1 (said, but for running out of memory). */
static int read_samples(const uint8_t *data, size_t len, const struct tables *t, const char *path,
			struct profile *p)
{
	struct pb b = { data, data + len, false }, sub;
	int num, wt, col[PPROF_N_SAMPLE_TYPES];
	uint64_t v;
	size_t cap = 0;

	value_columns(t, col);
	while (field(&b, &num, &wt, &v, &sub)) {
		if (num != PPROF_PROFILE_SAMPLE || wt != PB_LEN)
			continue;
		if (read_sample(&sub, t, col, p, &cap, path))
			return -1;
	}
	if (b.bad) {
		ht_err("%s: truncated or corrupt protobuf", path);
		return -1;
	}
	return 0;
}

int profile_read_proto(const uint8_t *gz, size_t gzlen, const char *path, struct profile *p, char **maps)
{
	size_t len, maplen = 0;
	const char *why;
	uint8_t *data = gunzip(gz, gzlen, &len, &why);
	struct tables t = { 0 };
	FILE *mf;
	int err = -1;

	memset(p, 0, sizeof(*p));
	*maps = NULL;
	if (!data) {
		ht_err("%s: %s", path, why);
		return -1;
	}
	/* Pass 1: strings, sample types, locations.  Pass 2: mappings.  Pass 3: samples. */
	mf = open_memstream(maps, &maplen);
	if (!read_tables(data, len, path, &t)) {
		python_locations(&t);
		read_mappings(data, len, &t, mf);
		err = read_samples(data, len, &t, path, p);
	}
	if (mf)
		fclose(mf);
	tables_free(&t);
	free(data);
	if (!err) {
		p->maps = *maps;
		err = profile_check_range(p, path);
	}
	if (err) {
		profile_free(p);
		free(*maps);
		*maps = NULL;
		return -1;
	}
	profile_normalize(p);
	return 0;
}
