#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heaptrace.h"
#include "output/writers.h"
#include "symbolize/pyframes.h"
#include "util/array.h"

/*
 * gperftools' spacing, "%6d: %8d [%6d: %8d] @": the Perl pprof needs white
 * space after each colon.  Addresses are return addresses, innermost first;
 * readers subtract one themselves to land on the call, except from the
 * first (see leaf_addr).
 */
static void counts(FILE *f, const struct prof_sampled *c)
{
	fprintf(f, "%6" PRId64 ": %8" PRId64 " [%6" PRIu64 ": %8" PRIu64 "] @", c->inuse_objects, c->inuse_bytes,
		c->alloc_objects, c->alloc_bytes);
}

/*
 * The counts a record holds: exact ones, or with --sample-rate the raw
 * counts of the sampled allocations.  Readers of a heap_v2/R profile
 * unsample each record themselves (go tool pprof's scaleHeapSample,
 * google-pprof's AdjustSamples): count and bytes times 1/(1 - exp(-a/R)),
 * a the record's average size.  That is exact for a stack whose blocks
 * have one size; heaptrace's own outputs weigh every block by its own
 * size, so they differ where a stack's sizes are mixed.
 */
static struct prof_sampled record_counts(const struct profile *p, const struct prof_stack *s)
{
	if (p->sample_rate)
		return s->sampled;
	return (struct prof_sampled){ s->c.inuse_objects, s->c.inuse_bytes, s->c.alloc_objects, s->c.alloc_bytes };
}

/* " 0x%016lx" without printf's parsing: a profile can hold millions of addresses. */
static void put_addr(FILE *f, uint64_t a)
{
	static const char hex[] = "0123456789abcdef";
	char buf[19] = " 0x";

	for (int i = 0; i < 16; i++)
		buf[3 + i] = hex[(a >> (60 - 4 * i)) & 15];
	fwrite_unlocked(buf, 1, sizeof(buf), f);
}

/*
 * The first address minus one.  google-pprof and jeprof subtract one from
 * every address but the first (FixCallerAddresses: in a CPU profile the
 * first is the interrupted instruction itself), so they would name the
 * instruction after the allocator call: often in another function than the
 * call, when the call ends an inlined one.  go tool pprof subtracts one from
 * each: from here, two, still inside the call instruction (2 bytes at the
 * least on x86-64, 4 on arm64).  profile_read_text adds the one back.
 */
static uint64_t leaf_addr(uint64_t pc)
{
	return pc ? pc - 1 : 0;
}

/*
 * The header.  go tool pprof gives a legacy profile four sample types only
 * when the header's allocated counts differ, as strings, from the in-use
 * ones and from "0"; otherwise two, and `-base` then refuses to compare a
 * snapshot taken before the first free with a later one.  In snapshots, a
 * leading zero (the same number to every reader) keeps the four types.
 */
static void header(FILE *f, const struct prof_sampled *c, bool snapshot, uint64_t sample_rate)
{
	char ao[32], ab[32];
	bool pad_o = snapshot && (c->alloc_objects == (uint64_t)c->inuse_objects || !c->alloc_objects);
	bool pad_b = snapshot && (c->alloc_bytes == (uint64_t)c->inuse_bytes || !c->alloc_bytes);

	snprintf(ao, sizeof(ao), "%s%" PRIu64, pad_o ? "0" : "", (uint64_t)c->alloc_objects);
	snprintf(ab, sizeof(ab), "%s%" PRIu64, pad_b ? "0" : "", (uint64_t)c->alloc_bytes);
	fprintf(f, "heap profile: %6" PRId64 ": %8" PRId64 " [%6s: %8s] @ ", c->inuse_objects, c->inuse_bytes, ao, ab);
	if (sample_rate)
		fprintf(f, "heap_v2/%" PRIu64 "\n", sample_rate);
	else
		fputs("heapprofile\n", f);
}

/* A name or a path on one line of PYTHON_CODE: a tab or a line break in it would end its field. */
static void put_field(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

/*
 * After the memory map, the code objects of the Python frames the
 * records name (a word: HT_PY_FRAME, the line's distance from the code's
 * first line, the code's index), one a line: "INDEX FIRSTLINE
 * NAME<tab>FILE".  pprof's readers skip lines of a memory map they do not
 * recognise; heaptrace diff reads them (profile/read_text.c), so that a
 * snapshot's Python frames keep their names.  A code object whose name
 * was lost is not listed.
 */
static void python_code(FILE *f, const struct profile *p)
{
	uint64_t *idx = NULL;
	size_t n = 0, cap = 0;

	for (size_t k = 0; k < p->n; k++)
		for (uint32_t i = 0; i < p->stacks[k].depth; i++) {
			uint64_t pc = p->stacks[k].pcs[i];
			if (!ht_pc_python(pc) || !(pc & HT_PY_CODE_MASK))
				continue;
			if (ARRAY_RESERVE(idx, cap, n + 1, 256))
				goto out;
			idx[n++] = pc & HT_PY_CODE_MASK;
		}
	if (!n)
		goto out;
	qsort(idx, n, sizeof(*idx), array_cmp_u64);
	if (p->maps && *p->maps && p->maps[strlen(p->maps) - 1] != '\n')
		fputc('\n', f);
	fputs("PYTHON_CODE:\n", f);
	for (size_t k = 0; k < n; k++) {
		const char *func, *file;
		int first;
		if ((k && idx[k] == idx[k - 1]) || !pyf_frame(HT_PY_FRAME | idx[k], &func, &file, &first))
			continue;
		fprintf(f, "%" PRIx64 " %d ", idx[k], first);
		put_field(f, func);
		fputc('\t', f);
		put_field(f, file);
		fputc('\n', f);
	}
out:
	free(idx);
}

int output_pprof_text(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top)
{
	(void)sym, (void)v, (void)top;
	size_t *order = profile_order(p, V_INUSE_SPACE);

	if (!order)
		return -1;
	/* Sums wrap rather than overflow: a profile read back may hold anything. */
	uint64_t t[4] = { 0 };
	for (size_t k = 0; k < p->n; k++) {
		struct prof_sampled c = record_counts(p, &p->stacks[k]);
		t[0] += (uint64_t)c.inuse_objects;
		t[1] += (uint64_t)c.inuse_bytes;
		t[2] += c.alloc_objects;
		t[3] += c.alloc_bytes;
	}
	struct prof_sampled total = { (int64_t)t[0], (int64_t)t[1], t[2], t[3] };
	header(f, &total, p->snapshot, p->sample_rate);
	for (size_t k = 0; k < p->n; k++) {
		const struct prof_stack *s = &p->stacks[order[k]];
		struct prof_sampled c = record_counts(p, s);

		counts(f, &c);
		for (uint32_t i = 0; i < s->depth; i++)
			put_addr(f, i ? s->pcs[i] : leaf_addr(s->pcs[i]));
		fputc('\n', f);
	}
	free(order);
	fputs("\nMAPPED_LIBRARIES:\n", f);
	if (p->maps)
		fputs(p->maps, f);
	python_code(f, p);
	return ferror(f) ? -1 : 0;
}
