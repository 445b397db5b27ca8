#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/growth.h"
#include "output/writers.h"

/* 1234567 -> "1,234,567": byte counts are read by people here. */
static const char *grouped(int64_t v, char *buf, size_t len)
{
	char digits[32];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, (uint64_t)(v < 0 ? -v : v));
	size_t o = 0;

	if (v < 0 && o + 1 < len)
		buf[o++] = '-';
	for (int i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

static const char *unit(enum ht_value v)
{
	return v == V_INUSE_SPACE || v == V_ALLOC_SPACE || v == V_REALLOC_SPACE ? "bytes" : "objects";
}

/* "2us", "512us", "2ms", "4s": the lower bound of a log2 microsecond bucket (i >= 1). */
static const char *bucket_name(int i, char *buf, size_t len)
{
	uint64_t us = 1ull << i;

	if (us < 1000)
		snprintf(buf, len, "%luus", (unsigned long)us);
	else if (us < 1000000)
		snprintf(buf, len, "%lums", (unsigned long)(us / 1000));
	else
		snprintf(buf, len, "%lus", (unsigned long)(us / 1000000));
	return buf;
}

/* How long this stack's blocks lived before their free, as a log2 histogram. */
static void print_lifetimes(FILE *f, const struct ht_site *c)
{
	uint64_t freed = 0;
	char b[16];

	for (int i = 0; i < HT_LIFE_BUCKETS; i++)
		freed += c->lifetimes[i];
	if (c->reset_frees)
		fprintf(f, "      freed by arena resets %u\n", c->reset_frees);
	if (c->missed_frees)
		fprintf(f, "      missed frees %u: the address came back while the block was live\n", c->missed_frees);
	if (!freed)
		return;
	fprintf(f, "      freed %lu, temporary %lu; lifetimes:", (unsigned long)freed, (unsigned long)c->temporary);
	/* The first bucket holds [0, 2) us: "<2us", not ">=0us", which reads as "lived 0 us". */
	if (c->lifetimes[0])
		fprintf(f, " <2us:%u", c->lifetimes[0]);
	for (int i = 1; i < HT_LIFE_BUCKETS; i++)
		if (c->lifetimes[i])
			fprintf(f, " >=%s:%u", bucket_name(i, b, sizeof(b)), c->lifetimes[i]);
	fputc('\n', f);
}

static void print_frames(FILE *f, const struct prof_stack *s, struct symbolizer *sym)
{
	char name[256];

	if (!s->depth)
		fputs("        [lost stack: the stack map could not hold it]\n", f);
	for (uint32_t i = 0; i < s->depth; i++) {
		const struct sym_frame *fr;
		int n = sym_lookup(sym, s->pcs[i], true, &fr);

		for (int k = 0; k < n; k++) {
			fprintf(f, "        %s%s", fr[k].inlined ? "(inlined) " : "",
				sym_frame_name(&fr[k], s->pcs[i], name, sizeof(name)));
			if (fr[k].file)
				fprintf(f, "  %s:%d", fr[k].file, fr[k].line);
			else if (fr[k].module && fr[k].func)
				fprintf(f, "  (%s)", fr[k].module);
			fputc('\n', f);
		}
	}
	if (s->flags & (HT_STACK_TRUNCATED | HT_STACK_MAX_DEPTH)) {
		fputs(s->flags & HT_STACK_TRUNCATED ? "        [truncated: the walk failed here]\n" :
						      "        [more frames: --max-depth reached]\n", f);
	}
}

static int cmp_unmatched(const void *a, const void *b)
{
	const struct prof_stack *x = *(const struct prof_stack *const *)a, *y = *(const struct prof_stack *const *)b;

	return x->c.unmatched_frees != y->c.unmatched_frees ? (x->c.unmatched_frees > y->c.unmatched_frees ? -1 : 1) : 0;
}

/* Where frees of blocks never seen allocated come from: the 3 stacks with the most. */
static void print_unmatched(FILE *f, const struct profile *p, struct symbolizer *sym)
{
	const struct prof_stack **by = p->n_unmatched ? calloc(p->n_unmatched, sizeof(*by)) : NULL;
	uint64_t n = 0;

	if (!by)
		return;
	for (size_t k = 0; k < p->n_unmatched; k++) {
		by[k] = &p->unmatched[k];
		n += p->unmatched[k].c.unmatched_frees;
	}
	qsort(by, p->n_unmatched, sizeof(*by), cmp_unmatched);
	fprintf(f, "             unmatched_frees: %lu of them from %zu stack%s (blocks never seen allocated:\n"
		   "             allocated before tracing, or by a function not traced); the most:\n",
		(unsigned long)n, p->n_unmatched, p->n_unmatched == 1 ? "" : "s");
	for (size_t k = 0; k < p->n_unmatched && k < 3; k++) {
		fprintf(f, "      unmatched frees %u\n", by[k]->c.unmatched_frees);
		print_frames(f, by[k], sym);
	}
	free(by);
}

int output_top(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t max_stacks)
{
	char a[32], b[32], c[32], d[32], losses[1024];
	enum ht_value asked = v;

	/*
	 * A churning process (a server between requests) may hold nothing at
	 * the end: "no stack has any inuse_space" answers nothing, what it
	 * allocated does.
	 */
	if (!p->is_diff && !site_value(&p->total, v) && (v == V_INUSE_SPACE || v == V_INUSE_OBJECTS) &&
	    p->total.alloc_objects)
		v = v == V_INUSE_SPACE ? V_ALLOC_SPACE : V_ALLOC_OBJECTS;

	size_t *order = profile_order(p, v);
	int64_t total = site_value(&p->total, v);

	if (!order)
		return -1;
	if (p->is_diff)
		fprintf(f, "heaptrace diff: stacks by growth of %s, largest first\n", value_name(v));
	else if (v != asked)
		fprintf(f, "heaptrace: PID %d, stacks by %s (nothing is in use at the end, so no %s)\n", p->pid,
			value_name(v), value_name(asked));
	else
		fprintf(f, "heaptrace: PID %d, stacks by %s\n", p->pid, value_name(v));
	if (!p->is_diff && p->name)
		fprintf(f, "  program:   %s\n", p->name);
	fprintf(f, "  in use:    %14s bytes in %s objects\n", grouped(p->total.inuse_bytes, a, sizeof(a)),
		grouped(p->total.inuse_objects, b, sizeof(b)));
	fprintf(f, "  allocated: %14s bytes in %s objects\n", grouped(p->total.alloc_bytes, c, sizeof(c)),
		grouped(p->total.alloc_objects, d, sizeof(d)));
	fprintf(f, "  stacks:    %14zu\n", p->n);
	if (!p->is_diff && p->rss.known)
		fprintf(f, "  rss:       %14s bytes resident%s (anon %s, file %s, shmem %s)\n",
			grouped(rss_total(&p->rss), a, sizeof(a)), p->rss.last ? " at its exit" : "",
			grouped(p->rss.anon, b, sizeof(b)), grouped(p->rss.file, c, sizeof(c)),
			grouped(p->rss.shmem, d, sizeof(d)));
	/* What the process holds because heaptrace traces it, so that it is not taken for the program's. */
	if (!p->is_diff && p->rss.known)
		fprintf(f, "  of which:  %14s bytes in heaptrace's own mappings (its stub, ring and tables)\n",
			grouped(p->rss.own, a, sizeof(a)));
	if (p->is_diff)
		goto stacks;
	/* heaptrack's summary: how much churn, how high it got, what stayed. */
	uint64_t temporary = 0;
	for (size_t k = 0; k < p->n; k++)
		temporary += p->stacks[k].c.temporary;
	fprintf(f, "  temporary: %14s allocations freed right after their allocation (heaptrack's count)\n",
		grouped(temporary, a, sizeof(a)));
	if (p->totals.peak_bytes)
		fprintf(f, "  peak:      %14s bytes in use, %.3f s after tracing started\n",
			grouped(p->totals.peak_bytes, a, sizeof(a)),
			p->totals.peak_ns > p->start_ns && p->start_ns ? (p->totals.peak_ns - p->start_ns) / 1e9 : 0.0);
	fprintf(f, "  leaked:    %14s bytes live at the end%s\n",
		grouped(p->total.inuse_bytes - (int64_t)p->suppressed.bytes, a, sizeof(a)),
		p->min_age > 0 ? " (blocks at least --min-age old)" : "");
	if (p->suppressed.stacks)
		fprintf(f, "  suppressed:%14s bytes in %s blocks of %" PRIu64 " stack%s (--suppressions: not leaks)\n",
			grouped(p->suppressed.bytes, a, sizeof(a)), grouped(p->suppressed.objects, b, sizeof(b)),
			p->suppressed.stacks, p->suppressed.stacks == 1 ? "" : "s");
	if (p->total.realloc_objects)
		fprintf(f, "  reallocs:  %14s reallocs of a block, %s bytes copied by those that moved it\n",
			grouped(p->total.realloc_objects, a, sizeof(a)), grouped(p->total.realloc_bytes, b, sizeof(b)));
	if (p->counters[HT_ARENA_RESETS])
		fprintf(f, "  resets:    %14s blocks freed by %s arena resets (not losses)\n",
			grouped(p->counters[HT_RESET_FREES], a, sizeof(a)),
			grouped(p->counters[HT_ARENA_RESETS], b, sizeof(b)));
	if (p->counters[HT_OOM_KILLS])
		fprintf(f, "  OOM:       killed by the kernel's OOM killer: this is the heap at the kill\n");
	output_losses(losses, sizeof(losses), p->counters, false);
	fprintf(f, "  losses:    %s\n", *losses ? losses : "none");
	print_unmatched(f, p, sym);
	if (p->growth) {
		fputc('\n', f);
		output_growth_table(f, p->growth, sym, max_stacks, "s");
	}
	/* Where the losses come from, when a stack can say: the allocations whose free went unseen. */
	if (p->counters[HT_MISSED_FREES]) {
		uint64_t at = 0;
		for (size_t k = 0; k < p->n; k++)
			at += p->stacks[k].c.missed_frees != 0;
		fprintf(f, "             missed_frees: blocks of %s stack%s (\"missed frees\" below); a free function\n"
			   "             not traced (--free-sym) or a reset not traced (--reset-sym)?\n",
			grouped(at, a, sizeof(a)), at == 1 ? "" : "s");
	}
	if (p->sample_rate)
		fprintf(f, "  sampled:   one allocation per %s bytes on average: counts are estimates,\n"
			   "             lifetimes and temporary those of the sampled blocks\n",
			grouped(p->sample_rate, a, sizeof(a)));
stacks:
	fputc('\n', f);

	size_t shown = 0;
	for (size_t k = 0; k < p->n && shown < max_stacks; k++) {
		const struct prof_stack *s = &p->stacks[order[k]];
		int64_t val = site_value(&s->c, v);

		if (!val)
			break;
		/* The in-use views are the leak views: a suppressed stack's blocks are not leaks. */
		if (s->suppressed && (v == V_INUSE_SPACE || v == V_INUSE_OBJECTS))
			continue;
		shown++;
		/* A diff's counts fall as well as grow: signed, and a share of the total's size, in the change's sign. */
		fprintf(f, "#%-3zu %s %s (%.1f%%)   in use %s B / %" PRId64 " obj, allocated %s B / %" PRId64 " obj\n",
			shown, grouped(val, a, sizeof(a)), unit(v), total ? 100.0 * val / llabs(total) : 0.0,
			grouped(s->c.inuse_bytes, b, sizeof(b)), (int64_t)s->c.inuse_objects,
			grouped(s->c.alloc_bytes, c, sizeof(c)), (int64_t)s->c.alloc_objects);
		if (s->c.realloc_objects)
			fprintf(f, "     reallocs %" PRId64 ", %s bytes copied\n", (int64_t)s->c.realloc_objects,
				grouped(s->c.realloc_bytes, b, sizeof(b)));
		print_lifetimes(f, &s->c);
		print_frames(f, s, sym);
		fputc('\n', f);
	}
	if (!shown)
		fprintf(f, "no stack has any %s\n", value_name(v));
	free(order);
	return ferror(f) ? -1 : 0;
}
