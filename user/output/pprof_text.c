#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

/*
 * gperftools' spacing, "%6d: %8d [%6d: %8d] @": the Perl pprof needs white
 * space after each colon.  Addresses are return addresses, innermost first;
 * readers subtract one themselves to land on the call.
 */
static void counts(FILE *f, const struct ht_site *c)
{
	fprintf(f, "%6" PRId64 ": %8" PRId64 " [%6" PRIu64 ": %8" PRIu64 "] @",
		(int64_t)c->inuse_objects, (int64_t)c->inuse_bytes, (uint64_t)c->alloc_objects,
		(uint64_t)c->alloc_bytes);
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
 * The header.  go tool pprof gives a legacy profile four sample types only
 * when the header's allocated counts differ, as strings, from the in-use
 * ones and from "0"; otherwise two, and `-base` then refuses to compare a
 * snapshot taken before the first free with a later one.  In snapshots, a
 * leading zero (the same number to every reader) keeps the four types.
 */
static void header(FILE *f, const struct ht_site *c, bool snapshot)
{
	char ao[32], ab[32];
	bool pad_o = snapshot && (c->alloc_objects == (uint64_t)c->inuse_objects || !c->alloc_objects);
	bool pad_b = snapshot && (c->alloc_bytes == (uint64_t)c->inuse_bytes || !c->alloc_bytes);

	snprintf(ao, sizeof(ao), "%s%" PRIu64, pad_o ? "0" : "", (uint64_t)c->alloc_objects);
	snprintf(ab, sizeof(ab), "%s%" PRIu64, pad_b ? "0" : "", (uint64_t)c->alloc_bytes);
	fprintf(f, "heap profile: %6" PRId64 ": %8" PRId64 " [%6s: %8s] @ heapprofile\n", (int64_t)c->inuse_objects,
		(int64_t)c->inuse_bytes, ao, ab);
}

int output_pprof_text(FILE *f, const struct profile *p)
{
	size_t *order = profile_order(p, V_INUSE_SPACE);

	if (!order)
		return -1;
	header(f, &p->total, p->snapshot);
	for (size_t k = 0; k < p->n; k++) {
		const struct prof_stack *s = &p->stacks[order[k]];

		counts(f, &s->c);
		for (uint32_t i = 0; i < s->depth; i++)
			put_addr(f, s->pcs[i]);
		fputc('\n', f);
	}
	free(order);
	fputs("\nMAPPED_LIBRARIES:\n", f);
	if (p->maps)
		fputs(p->maps, f);
	return ferror(f) ? -1 : 0;
}
