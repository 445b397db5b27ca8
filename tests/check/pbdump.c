/*
 * pbdump: a pprof profile.proto (inflated, on stdin) as text, one top-level
 * field a line in the order written, every field by its name in
 * profile.proto, string indices with their strings.  For the golden files
 * of -f proto (tests/check/golden.sh): a change shows as a readable diff.
 * Knows the schema on its own, not from heaptrace's writer or reader, so
 * that a wrong field number in either shows here.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { INT, HEX, STR, ValueType, Sample, Label, Mapping, Location, Line, Function, Profile };

struct field {
	int num;
	const char *name;
	enum kind kind;
};

/* github.com/google/pprof/proto/profile.proto */
static const struct field schema[][16] = {
	[Profile] = { { 1, "sample_type", ValueType }, { 2, "sample", Sample }, { 3, "mapping", Mapping },
		      { 4, "location", Location }, { 5, "function", Function }, { 6, "string_table", STR },
		      { 7, "drop_frames", STR }, { 8, "keep_frames", STR }, { 9, "time_nanos", INT },
		      { 10, "duration_nanos", INT }, { 11, "period_type", ValueType }, { 12, "period", INT },
		      { 13, "comment", STR }, { 14, "default_sample_type", STR }, { 15, "doc_url", STR } },
	[ValueType] = { { 1, "type", STR }, { 2, "unit", STR } },
	[Sample] = { { 1, "location_id", INT }, { 2, "value", INT }, { 3, "label", Label } },
	[Label] = { { 1, "key", STR }, { 2, "str", STR }, { 3, "num", INT }, { 4, "num_unit", STR } },
	[Mapping] = { { 1, "id", INT }, { 2, "memory_start", HEX }, { 3, "memory_limit", HEX }, { 4, "file_offset", HEX },
		      { 5, "filename", STR }, { 6, "build_id", STR }, { 7, "has_functions", INT },
		      { 8, "has_filenames", INT }, { 9, "has_line_numbers", INT }, { 10, "has_inline_frames", INT } },
	[Location] = { { 1, "id", INT }, { 2, "mapping_id", INT }, { 3, "address", HEX }, { 4, "line", Line },
		       { 5, "is_folded", INT } },
	[Line] = { { 1, "function_id", INT }, { 2, "line", INT }, { 3, "column", INT } },
	[Function] = { { 1, "id", INT }, { 2, "name", STR }, { 3, "system_name", STR }, { 4, "filename", STR },
		       { 5, "start_line", INT } },
};

static char **strs;
static size_t nstr;

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t c = *(*p)++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

static void bad(const char *what)
{
	printf("<%s>\n", what);
	exit(1);
}

static void scalar(enum kind k, uint64_t v)
{
	if (k == HEX)
		printf("0x%" PRIx64, v);
	else if (k == STR)
		printf("%" PRIu64 "\"%s\"", v, v < nstr ? strs[v] : "<no such string>");
	else
		printf("%" PRId64, (int64_t)v);
}

static void message(enum kind type, const uint8_t *p, const uint8_t *end, bool top)
{
	bool first = true;

	while (p < end) {
		uint64_t key, v, len;
		const struct field *f = NULL;

		if (!varint(&p, end, &key))
			bad("truncated key");
		for (int i = 0; i < 16 && schema[type][i].name; i++)
			if (schema[type][i].num == (int)(key >> 3))
				f = &schema[type][i];
		if (!top && !first)
			putchar(' ');
		first = false;
		printf("%s=", f ? f->name : "?");
		if ((key & 7) == 0) {
			if (!varint(&p, end, &v))
				bad("truncated varint");
			scalar(f ? f->kind : INT, v);
		} else if ((key & 7) == 2) {
			if (!varint(&p, end, &len) || len > (uint64_t)(end - p))
				bad("truncated bytes");
			if (f && f->kind >= ValueType) {
				printf("{");
				message(f->kind, p, p + len, false);
				printf("}");
			} else if (f && type == Profile && f->num == 6) {
				printf("\"%.*s\"", (int)len, (const char *)p);
			} else {
				/* packed scalars */
				const uint8_t *q = p;
				printf("[");
				while (q < p + len) {
					if (!varint(&q, p + len, &v))
						bad("truncated packed varint");
					scalar(f ? f->kind : INT, v);
					if (q < p + len)
						putchar(' ');
				}
				printf("]");
			}
			p += len;
		} else {
			bad("a wire type profile.proto does not use");
		}
		if (top)
			putchar('\n');
	}
}

int main(void)
{
	size_t n = 0, cap = 1 << 16;
	uint8_t *buf = malloc(cap);
	size_t r;

	while (buf && (r = fread(buf + n, 1, cap - n, stdin)) > 0)
		if ((n += r) == cap)
			buf = realloc(buf, cap *= 2);
	if (!buf)
		bad("out of memory");
	/* The string table first: indices are shown with their strings. */
	for (const uint8_t *p = buf, *end = buf + n; p < end;) {
		uint64_t key, v;
		if (!varint(&p, end, &key))
			bad("truncated key");
		if ((key & 7) == 2) {
			if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
				bad("truncated bytes");
			if (key >> 3 == 6) {
				strs = realloc(strs, (nstr + 1) * sizeof(*strs));
				strs[nstr++] = strndup((const char *)p, v);
			}
			p += v;
		} else if ((key & 7) != 0 || !varint(&p, end, &v)) {
			bad("not a profile.proto");
		}
	}
	message(Profile, buf, buf + n, true);
	return 0;
}
