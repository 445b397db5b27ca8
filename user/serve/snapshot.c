#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"
#include "serve/snapshot.h"
#include "util/time.h"

static int snapshot_emit(struct snapshots *ss, struct profile *p, uint64_t t0);

static uint64_t ms_since(uint64_t ns)
{
	return (monotonic_ns() - ns) / 1000000;
}

/* Growth since the previous snapshot, then p becomes the previous one. */
static void keep(struct snapshots *ss, struct profile *p, FILE *growth_to)
{
	if (ss->have_prev && growth_to) {
		struct profile d;
		if (!profile_diff(&ss->prev, p, &d)) {
			struct symbolizer *sym = sym_open(p->maps ? p->maps : "");
			if (sym) {
				output_growth(growth_to, &d, sym, ss->value, 5);
				sym_close(sym);
			}
			profile_free(&d);
		}
	}
	if (ss->have_prev) {
		/* prev joins the older ones, the oldest leaves. */
		if (ss->n_older == GROWTH_K - 2) {
			profile_free(&ss->older[0]);
			memmove(&ss->older[0], &ss->older[1], (GROWTH_K - 3) * sizeof(ss->older[0]));
			ss->n_older--;
		}
		ss->older[ss->n_older++] = ss->prev;
	}
	ss->prev = *p;
	ss->prev.growth = NULL;         /* snapshot_write's, freed after the write */
	if (!ss->prev.own_maps)
		ss->prev.maps = NULL;   /* the target's maps text is replaced as it changes */
	ss->have_prev = true;
	memset(p, 0, sizeof(*p));
}

/* The growth of p's stacks over the last snapshots and p, into g (p->growth); -1: none. */
static int judge(struct snapshots *ss, struct profile *p, struct growth *g)
{
	struct profile series[GROWTH_K];
	double secs[GROWTH_K];
	size_t n = 0;

	for (int i = 0; i < ss->n_older; i++)
		series[n++] = ss->older[i];
	if (ss->have_prev)
		series[n++] = ss->prev;
	series[n++] = *p;
	for (size_t i = 0; i < n; i++)
		secs[i] = series[i].now_ns / 1e9;
	if (growth_series(series, n, secs, g))
		return -1;
	p->growth = g;
	return 0;
}

int snapshot_write(struct snapshots *ss, struct profile *p)
{
	uint64_t t0 = monotonic_ns();
	struct growth g;
	int err, judged;

	ss->seq++;
	p->snapshot = true;
	judged = !judge(ss, p, &g);
	err = snapshot_emit(ss, p, t0);
	p->growth = NULL;
	if (judged)
		growth_free(&g);
	return err;
}

static int snapshot_emit(struct snapshots *ss, struct profile *p, uint64_t t0)
{
	int err;
	if (ss->live) {
		/* A terminal: redraw in place, like top. */
		fputs("\033[H\033[J", stdout);
		err = output_write(stdout, FMT_TOP, p, ss->value, ss->top);
		keep(ss, p, stdout);
		fflush(stdout);
		return err;
	}
	char path[4200], tag[16];
	snprintf(tag, sizeof(tag), "%04d", ss->seq);
	if (!output_tagged_path(path, sizeof(path), ss->prefix, tag, ss->fmt))
		snprintf(path, sizeof(path), "%s.%s.heap", ss->prefix, tag);
	err = output_file(path, ss->fmt, p, ss->value, ss->top);
	if (err) {
		ht_err("snapshot %d lost: cannot write %s: %s", ss->seq, path, strerror(errno));
		ss->failed++;
	}
	ht_info("snapshot %d: %s, %zu stacks, %lld bytes in use, %lu ms", ss->seq, path, p->n,
		(long long)p->total.inuse_bytes, (unsigned long)ms_since(t0));
	keep(ss, p, ss->diff ? stderr : NULL);
	return err;
}

void snapshot_tick(void *arg)
{
	struct snapshots *ss = arg;
	struct profile p;

	target_refresh_maps(ss->t);
	if (profile_take_main(ss->src, ss->t->pid, ss->t->maps, &p)) {
		ht_err("snapshot %d lost: cannot read the maps", ss->seq + 1);
		ss->seq++;
		ss->failed++;
		return;
	}
	p.name = ss->t->name;
	snapshot_write(ss, &p);
	profile_free(&p);
}

void snapshot_peak_path(const char *output, const char *prefix, pid_t pid, enum ht_format fmt, char *buf,
			size_t len)
{
	char base[64];

	snprintf(base, sizeof(base), "heaptrace.%d", pid);
	if (output_tagged_path(buf, len, prefix ? prefix : output ? output : base, "peak", fmt))
		return;
	if (prefix)
		snprintf(buf, len, "%s.peak.heap", prefix);
	else if (output)
		snprintf(buf, len, "%s.peak", output);
	else
		snprintf(buf, len, "heaptrace.%d.peak.heap", pid);
}

void snapshots_free(struct snapshots *ss)
{
	if (ss->have_prev)
		profile_free(&ss->prev);
	ss->have_prev = false;
	for (int i = 0; i < ss->n_older; i++)
		profile_free(&ss->older[i]);
	ss->n_older = 0;
}
