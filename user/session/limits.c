/* --limit-peak and --limit-leak: the check, and what is said when it fails. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/limits.h"
#include "symbolize/symbolize.h"
#include "util/log.h"

/* "leak_fn (t.c:12) < main (t.c:30) < ...": the innermost named frames, where one line can hold them. */
static void stack_line(const struct prof_stack *s, struct symbolizer *sym, char *buf, size_t len)
{
	size_t off = 0;
	int shown = 0;
	uint32_t i = 0;
	char name[256];

	if (!s->depth) {
		snprintf(buf, len, "[lost stack]");
		return;
	}
	buf[0] = '\0';
	for (; i < s->depth && shown < 4 && off < len; i++) {
		const struct sym_frame *fr;
		int n = sym ? sym_lookup(sym, s->pcs[i], true, &fr) : 0;

		if (!n) {
			off += snprintf(buf + off, len - off, "%s0x%" PRIx64, shown++ ? " < " : "", s->pcs[i]);
			continue;
		}
		for (int k = 0; k < n && off < len; k++) {
			off += snprintf(buf + off, len - off, "%s%s", shown++ ? " < " : "",
					sym_frame_name(&fr[k], s->pcs[i], name, sizeof(name)));
			if (fr[k].file && off < len)
				off += snprintf(buf + off, len - off, " (%s:%d)", fr[k].file, fr[k].line);
		}
	}
	if (i < s->depth && off < len)
		snprintf(buf + off, len - off, " < ...");
}

static int64_t leak_of(const struct prof_stack *s)
{
	return s->suppressed ? 0 : s->c.inuse_bytes;
}

static int64_t peak_of(const struct prof_stack *s)
{
	return s->c.peak_bytes;
}

static int cmp_desc(const void *a, const void *b, void *arg)
{
	int64_t (*val)(const struct prof_stack *) = arg;
	int64_t x = val(*(const struct prof_stack *const *)a), y = val(*(const struct prof_stack *const *)b);

	return x > y ? -1 : x < y;
}

/* The stacks holding most of val, largest first, one line each. */
static void name_stacks(const struct profile *p, int64_t (*val)(const struct prof_stack *), const char *what)
{
	const struct prof_stack **order = malloc((p->n ? p->n : 1) * sizeof(*order));
	struct symbolizer *sym = sym_open(p->maps ? p->maps : "");
	char line[2048];

	if (!order) {
		if (sym)
			sym_close(sym);
		return;
	}
	for (size_t i = 0; i < p->n; i++)
		order[i] = &p->stacks[i];
	qsort_r(order, p->n, sizeof(*order), cmp_desc, (void *)val);
	for (size_t i = 0; i < p->n && i < LIMIT_STACKS && val(order[i]) > 0; i++) {
		stack_line(order[i], sym, line, sizeof(line));
		ht_err("  %" PRId64 " bytes %s: %s", val(order[i]), what, line);
	}
	free(order);
	if (sym)
		sym_close(sym);
}

static const char *who(const struct profile *p, char *buf, size_t len)
{
	snprintf(buf, len, "PID %d%s%s%s", (int)p->pid, p->name ? " (" : "", p->name ? p->name : "", p->name ? ")" : "");
	return buf;
}

bool limits_check(const struct limits *l, const struct profile *p)
{
	bool over = false;
	char w[4200];

	if (l->peak_set && p->totals.peak_bytes > l->peak) {
		over = true;
		ht_err("--limit-peak %" PRIu64 " exceeded: %s peaked at %" PRIu64 " bytes in use, %.3f s after the start; "
		       "the largest stacks at the peak:", l->peak, who(p, w, sizeof(w)), (uint64_t)p->totals.peak_bytes,
		       p->totals.peak_ns > p->start_ns ? (p->totals.peak_ns - p->start_ns) / 1e9 : 0.0);
		name_stacks(p, peak_of, "in use");
	}
	/*
	 * Leaked: live at the end, like -f top's "leaked" (with --min-age, only
	 * blocks that old), less what --suppressions took out.
	 */
	int64_t leaked = p->total.inuse_bytes - (int64_t)p->suppressed.bytes;
	int64_t blocks = p->total.inuse_objects - (int64_t)p->suppressed.objects;
	if (l->leak_set && leaked > 0 && (uint64_t)leaked > l->leak) {
		over = true;
		ht_err("--limit-leak %" PRIu64 " exceeded: %s leaked %" PRId64 " bytes in %" PRId64 " block%s%s:", l->leak,
		       who(p, w, sizeof(w)), leaked, blocks, blocks == 1 ? "" : "s",
		       p->ended ? "" : " (live when tracing stopped: the process had not exited)");
		name_stacks(p, leak_of, "leaked");
	}
	if (l->leak_set && p->suppressed.stacks)
		ht_err("suppressed: %" PRIu64 " bytes in %" PRIu64 " block%s of %" PRIu64 " stack%s (--suppressions)",
		       p->suppressed.bytes, p->suppressed.objects, p->suppressed.objects == 1 ? "" : "s",
		       p->suppressed.stacks, p->suppressed.stacks == 1 ? "" : "s");
	return over;
}
