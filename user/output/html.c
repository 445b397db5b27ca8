/*
 * -f html: one self-contained page.  The template (user/output/report/:
 * page, style and script, embedded by the Makefile) draws everything in
 * the browser from one JSON object written here in place of its @DATA@
 * marker: nothing is fetched, the file works from disk.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "output/flame.h"
#include "output/writers.h"
#include "profile/growth.h"
#include "profile/timeline.h"
#include "util/version.h"
#include "report_html.h"        /* generated: report_html[], the template */

#define DATA_MARK "@DATA@"

/*
 * Inside a <script> element only "</script" and "<!--" can end or change
 * it: every '<' is written \u003c, so no name or path can.
 */
static int json_esc(FILE *f, unsigned char c)
{
	switch (c) {
	case '"': fputs("\\\"", f); return 1;
	case '\\': fputs("\\\\", f); return 1;
	case '<': fputs("\\u003c", f); return 1;
	case '>': fputs("\\u003e", f); return 1;
	case '&': fputs("\\u0026", f); return 1;
	}
	return 0;
}

static void str(FILE *f, const char *s)
{
	fputc('"', f);
	flame_put_text(f, s, json_esc);
	fputc('"', f);
}

/* "key":"value" (null for NULL) */
static void kstr(FILE *f, const char *key, const char *s)
{
	fprintf(f, "\"%s\":", key);
	if (s)
		str(f, s);
	else
		fputs("null", f);
}

/* "key":[v,v,...] of a counter over every stack. */
static void stack_column(FILE *f, const char *key, const struct profile *p, size_t off, bool is_signed)
{
	fprintf(f, ",\n\"%s\":[", key);
	for (size_t i = 0; i < p->n; i++) {
		const char *c = (const char *)&p->stacks[i].c + off;
		if (is_signed)
			fprintf(f, "%s%" PRId64, i ? "," : "", *(const int64_t *)c);
		else
			fprintf(f, "%s%" PRIu64, i ? "," : "", *(const uint64_t *)c);
	}
	fputc(']', f);
}

static double since_start(const struct profile *p, uint64_t ns)
{
	return ns > p->start_ns && p->start_ns ? (ns - p->start_ns) / 1e9 : 0;
}

static void summary(FILE *f, const struct profile *p)
{
	const struct tl_series *tl = p->timeline;
	uint64_t end = tl ? tl->pt[tl->n - 1].ns : p->now_ns;

	fprintf(f, "\"version\":\"%s\",\"pid\":%d,\"is_diff\":%s,\"ended\":%s,", HEAPTRACE_VERSION, (int)p->pid,
		p->is_diff ? "true" : "false", p->ended ? "true" : "false");
	kstr(f, "program", p->name);
	fputc(',', f);
	kstr(f, "command", p->command);
	fprintf(f, ",\"duration\":%.3f,\"sample_rate\":%" PRIu64 ",\"min_age\":%g", since_start(p, end), p->sample_rate,
		p->min_age);
	fprintf(f, ",\n\"peak\":{\"bytes\":%" PRIu64 ",\"t\":%.6f}", (uint64_t)p->totals.peak_bytes,
		since_start(p, p->totals.peak_ns));
	fprintf(f, ",\n\"total\":{\"inuse_bytes\":%" PRId64 ",\"inuse_objects\":%" PRId64 ",\"alloc_bytes\":%" PRIu64
		   ",\"alloc_objects\":%" PRIu64 ",\"temporary\":%" PRIu64 ",\"peak_bytes\":%" PRId64 "}",
		(int64_t)p->total.inuse_bytes, (int64_t)p->total.inuse_objects, (uint64_t)p->total.alloc_bytes,
		(uint64_t)p->total.alloc_objects, (uint64_t)p->total.temporary, (int64_t)p->total.peak_bytes);
	if (p->rss.known)
		fprintf(f, ",\n\"rss\":{\"anon\":%" PRIu64 ",\"file\":%" PRIu64 ",\"shmem\":%" PRIu64
			   ",\"heaptrace\":%" PRIu64 ",\"at_exit\":%s}",
			p->rss.anon, p->rss.file, p->rss.shmem, p->rss.own, p->rss.last ? "true" : "false");
	fprintf(f, ",\n\"realloc\":{\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", (uint64_t)p->total.realloc_objects,
		(uint64_t)p->total.realloc_bytes);
	fprintf(f, ",\n\"suppressed\":{\"bytes\":%" PRIu64 ",\"objects\":%" PRIu64 ",\"stacks\":%" PRIu64 "}",
		p->suppressed.bytes, p->suppressed.objects, p->suppressed.stacks);
	fputs(",\n\"counters\":[", f);
	for (int c = 0; c < HT_COUNTER_MAX; c++)
		fprintf(f, "%s[\"%s\",%" PRIu64 ",%d]", c ? "," : "", counter_name(c), p->counters[c], counter_is_loss(c));
	fputs("],\n\"lifetimes\":[", f);
	for (int i = 0; i < HT_LIFE_BUCKETS; i++)
		fprintf(f, "%s%u", i ? "," : "", p->total.lifetimes[i]);
	fputs("],\n\"sizes\":[", f);
	for (int i = 0; i < HT_SIZE_BUCKETS; i++)
		fprintf(f, "%s%" PRId64, i ? "," : "", (int64_t)ht_q16_round(p->totals.alloc_sizes[i]));
	fputc(']', f);
}

static void rss_value(FILE *f, size_t i, int64_t v)
{
	if (v == TL_NO_RSS)
		fprintf(f, "%snull", i ? "," : "");
	else
		fprintf(f, "%s%" PRId64, i ? "," : "", v);
}

/* The heap over time: milliseconds since the start, bytes, objects (null at the inserted peak). */
static void timeline(FILE *f, const struct profile *p)
{
	const struct tl_series *tl = p->timeline;

	fputs(",\n\"timeline\":", f);
	if (!tl) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"period\":%g,\"t\":[", tl->period);
	for (size_t i = 0; i < tl->n; i++)
		fprintf(f, "%s%.1f", i ? "," : "", since_start(p, tl->pt[i].ns) * 1e3);
	fputs("],\n\"bytes\":[", f);
	for (size_t i = 0; i < tl->n; i++)
		fprintf(f, "%s%" PRId64, i ? "," : "", tl->pt[i].bytes);
	fputs("],\n\"objects\":[", f);
	for (size_t i = 0; i < tl->n; i++) {
		if (tl->pt[i].objects == TL_NO_OBJECTS)
			fprintf(f, "%snull", i ? "," : "");
		else
			fprintf(f, "%s%" PRId64, i ? "," : "", tl->pt[i].objects);
	}
	/* Resident bytes of the process at each point (null at the inserted peak, and once it is gone). */
	fputs("],\n\"rss\":[", f);
	for (size_t i = 0; i < tl->n; i++)
		rss_value(f, i, tl->pt[i].rss);
	/* Of that, heaptrace's own mappings' (read at most a second before). */
	fputs("],\n\"rss_heaptrace\":[", f);
	for (size_t i = 0; i < tl->n; i++)
		rss_value(f, i, tl->pt[i].rss_own);
	fputs("],\n\"marks\":[", f);
	for (size_t i = 0; i < tl->n_marks; i++)
		fprintf(f, "%s%.1f", i ? "," : "", since_start(p, tl->marks[i]) * 1e3);
	fputs("]}", f);
}

static void flame(FILE *f, const struct profile *p, const struct flame *fl)
{
	char site[512];

	fputs(",\n\"frames\":{\"name\":[", f);
	for (size_t i = 0; i < fl->n_frames; i++) {
		fputs(i ? "," : "", f);
		str(f, fl->frames[i].name);
	}
	fputs("],\n\"site\":[", f);
	for (size_t i = 0; i < fl->n_frames; i++) {
		fputs(i ? "," : "", f);
		str(f, flame_site(&fl->frames[i], site, sizeof(site)));
	}
	/*
	 * Per node: how far back its parent is, and its frame (the root's
	 * are 0, -1).  Nodes are made stack by stack, so most parents are
	 * the node just before: small numbers, a third of the size.
	 */
	fputs("]},\n\"nodes\":[0,-1", f);
	for (size_t i = 1; i < fl->n_nodes; i++)
		fprintf(f, ",%zu,%u", i - fl->nodes[i].parent, fl->nodes[i].frame);
	fputs("],\n\"stacks\":{\"leaf\":[", f);
	for (size_t i = 0; i < p->n; i++)
		fprintf(f, "%s%u", i ? "," : "", fl->leaf[i]);
	fputc(']', f);
	stack_column(f, "inuse_bytes", p, offsetof(struct ht_site, inuse_bytes), true);
	stack_column(f, "inuse_objects", p, offsetof(struct ht_site, inuse_objects), true);
	stack_column(f, "peak_bytes", p, offsetof(struct ht_site, peak_bytes), true);
	stack_column(f, "alloc_bytes", p, offsetof(struct ht_site, alloc_bytes), false);
	stack_column(f, "alloc_objects", p, offsetof(struct ht_site, alloc_objects), false);
	stack_column(f, "temporary", p, offsetof(struct ht_site, temporary), false);
	stack_column(f, "realloc_objects", p, offsetof(struct ht_site, realloc_objects), false);
	stack_column(f, "realloc_bytes", p, offsetof(struct ht_site, realloc_bytes), false);
	/* --suppressions: which stacks leave the leak views (the report takes their in-use out). */
	fputs(",\n\"suppressed\":[", f);
	for (size_t i = 0; i < p->n; i++)
		fprintf(f, "%s%d", i ? "," : "", p->stacks[i].suppressed);
	fputs("]}", f);
}

/* Blocks live at the end by stack and allocation time bin: rows of stack, bin, objects, bytes. */
static void live(FILE *f, const struct profile *p)
{
	bool first = true;

	fputs(",\n\"live\":", f);
	if (!p->live_bins) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"bins\":%u,\"bin_ms\":%.6f,\"rows\":[", p->live_bins, p->live_bin_ns / 1e6);
	for (size_t i = 0; i < p->n; i++)
		for (uint32_t k = 0; k < p->stacks[i].n_live; k++) {
			const struct prof_live *l = &p->stacks[i].live[k];
			fprintf(f, "%s%zu,%u,%u,%" PRIu64, first ? "" : ",", i, l->bin, l->objects, l->bytes);
			first = false;
		}
	fputs("]}", f);
}

/* -i: the stacks' growth over the last snapshots (profile/growth.h), the top ones' in-use for the chart. */
static void growth(FILE *f, const struct profile *p, struct symbolizer *sym, size_t top)
{
	const struct growth *g = p->growth;
	char name[256];

	fputs(",\n\"growth\":", f);
	if (!g || !g->t) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"k\":%d,\"t\":[", GROWTH_K);
	for (size_t i = 0; i < g->n_profiles; i++)
		fprintf(f, "%s%.3f", i ? "," : "", g->t[i] - p->start_ns / 1e9);
	fputs("],\"rows\":[", f);
	for (size_t i = 0; i < g->n && i < top; i++) {
		const struct growth_row *r = &g->rows[i];
		fprintf(f, "%s{\"cls\":\"%s\",\"slope\":%.1f,\"name\":", i ? ",\n" : "", growth_class_name(r->cls),
			r->slope);
		str(f, leaf_name(r->s, sym, name, sizeof(name)));
		fputs(",\"inuse\":[", f);
		for (size_t k = 0; k < g->n_profiles; k++)
			fprintf(f, "%s%" PRId64, k ? "," : "", r->inuse[k]);
		fputs("]}", f);
	}
	fputs("]}", f);
}

int output_html(FILE *f, const struct profile *p, struct symbolizer *sym, enum ht_value v, size_t top)
{
	const char *tpl = (const char *)report_html, *mark = memmem(tpl, sizeof(report_html), DATA_MARK, strlen(DATA_MARK));
	struct flame fl;

	if (!mark || flame_build(&fl, p, sym))
		return -1;
	fwrite(tpl, 1, mark - tpl, f);
	fprintf(f, "{\"value\":\"%s\",\"top\":%zu,", value_name(v), top);
	summary(f, p);
	timeline(f, p);
	flame(f, p, &fl);
	live(f, p);
	growth(f, p, sym, top);
	fputs("}", f);
	mark += strlen(DATA_MARK);
	fwrite(mark, 1, sizeof(report_html) - (mark - tpl), f);
	flame_free(&fl);
	return ferror(f) ? -1 : 0;
}
