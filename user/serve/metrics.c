/* /metrics beside the totals: --merge's series per process, with a bound on their number. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/metrics.h"

/* --merge's /metrics series per process: at most this many, and one for the rest. */
#define METRICS_TOP_PROCS 20

/* A Prometheus label value: backslash, quote and newline escaped. */
static void label_value(FILE *m, const char *s)
{
	for (; s && *s; s++)
		if (*s == '\\' || *s == '"')
			fprintf(m, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", m);
		else
			fputc(*s, m);
}

static int by_inuse(const void *a, const void *b)
{
	const struct proc_totals *x = a, *y = b;

	return (x->t.inuse_bytes < y->t.inuse_bytes) - (x->t.inuse_bytes > y->t.inuse_bytes);
}

/*
 * --merge: in-use bytes per process, labelled pid and program.  Bounded:
 * the METRICS_TOP_PROCS processes that hold most, then one series
 * pid="other" for the rest (a service of 500 backends stays 21 series).
 */
void metrics_by_process(FILE *m, const struct profile_source *src, pid_t pid, const char *name)
{
	struct proc_totals *v;
	size_t n;
	int64_t other_bytes = 0;
	bool other = false;

	if (profile_proc_totals(src, pid, &v, &n))
		return;
	if (!v[0].name && name)
		v[0].name = strdup(name);
	qsort(v, n, sizeof(*v), by_inuse);
	fprintf(m, "# HELP heaptrace_process_inuse_bytes Bytes in live heap blocks of each traced process (--merge; "
		   "the %d that hold most, pid=\"other\" the rest).\n"
		   "# TYPE heaptrace_process_inuse_bytes gauge\n", METRICS_TOP_PROCS);
	for (size_t i = 0; i < n; i++) {
		if (i >= METRICS_TOP_PROCS) {
			other_bytes += v[i].t.inuse_bytes;
			other = true;
			continue;
		}
		fprintf(m, "heaptrace_process_inuse_bytes{pid=\"%d\",program=\"", v[i].pid);
		label_value(m, v[i].name ? v[i].name : "?");
		fprintf(m, "\"} %" PRId64 "\n", (int64_t)v[i].t.inuse_bytes);
	}
	if (other)
		fprintf(m, "heaptrace_process_inuse_bytes{pid=\"other\",program=\"other\"} %" PRId64 "\n", other_bytes);
	proc_totals_free(v, n);
}

