/* The heap over time: samples of the BPF totals, taken by a thread while tracing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/profile.h"
#include "profile/timeline.h"
#include "tracer/tracer.h"
#include "util/array.h"
#include "util/log.h"
#include "util/rss.h"
#include "util/time.h"

/*
 * A long run keeps its whole span at half the resolution rather than
 * losing its start: neighbours merge into the higher of the two, so the
 * peak and every spike stay visible.
 */
static void halve(struct tl_series *s)
{
	size_t out = 0;

	for (size_t i = 0; i < s->n; i += 2) {
		struct tl_point p = s->pt[i];
		if (i + 1 < s->n && s->pt[i + 1].bytes >= p.bytes)
			p = s->pt[i + 1];
		if (i + 1 < s->n) {
			int64_t r0 = s->pt[i].rss, r1 = s->pt[i + 1].rss;
			int64_t o0 = s->pt[i].rss_own, o1 = s->pt[i + 1].rss_own;
			p.rss = r0 > r1 ? r0 : r1;
			p.rss_own = o0 > o1 ? o0 : o1;
		}
		s->pt[out++] = p;
	}
	s->n = out;
	s->period *= 2;
}

static bool push(struct tl_series *s, struct tl_point p)
{
	if (s->n == TL_MAX_POINTS)
		halve(s);
	if (ARRAY_RESERVE(s->pt, s->cap, s->n + 1, 1024))
		return false;
	s->pt[s->n++] = p;
	return true;
}

/*
 * A point in its time's place: a peak the ring's drain accounted after a
 * sample carries its allocation's time, which may come before that
 * sample's.
 */
static void put_in_order(struct tl_series *s, struct tl_point p)
{
	if (!push(s, p))
		return;
	size_t i = s->n - 1;
	for (; i > 0 && s->pt[i - 1].ns > p.ns; i--)
		s->pt[i] = s->pt[i - 1];
	s->pt[i] = p;
}

static void sample_slot(struct tl_series *s, const struct ht_totals *t, uint64_t now, pid_t pid)
{
	/*
	 * A peak between two samples (a block allocated and freed within a
	 * period) would fall through the grid: the BPF side keeps its exact value
	 * and time, so it goes in as a point of its own.
	 */
	if (t->peak_bytes && t->peak_ns != s->peak_ns && t->peak_ns <= now) {
		s->peak_ns = t->peak_ns;
		if ((int64_t)t->peak_bytes > t->inuse_bytes)
			put_in_order(s, (struct tl_point){ t->peak_ns, (int64_t)t->peak_bytes, TL_NO_OBJECTS, TL_NO_RSS, TL_NO_RSS });
	}
	struct ht_rss r = { 0 };
	if (pid)
		rss_read_often(pid, &r);
	/* After the exit its last RSS would draw a flat line that is not there: none. */
	bool rss = r.known && !r.last;
	push(s, (struct tl_point){ now, t->inuse_bytes, ht_q16_round(t->inuse_objects),
				   rss ? (int64_t)rss_total(&r) : TL_NO_RSS, rss ? (int64_t)r.own : TL_NO_RSS });
}

static void sample(struct timeline *tl)
{
	/* The ptrace loop adds children while we run. */
	uint32_t n = __atomic_load_n(&tl->tr->n_slots, __ATOMIC_RELAXED);

	pthread_mutex_lock(&tl->lock);
	for (uint32_t slot = 0; slot < n && slot < HT_MAX_PROCS; slot++) {
		struct ht_totals t;
		tracer_totals(tl->tr, slot, &t);
		/* Read after the totals: a peak they hold is not later than now. */
		sample_slot(&tl->s[slot], &t, monotonic_ns(), tl->pid[slot]);
	}
	pthread_mutex_unlock(&tl->lock);
}

/* Samples on a fixed grid from the start; one that comes late is not made up for. */
static void *sampler(void *arg)
{
	struct timeline *tl = arg;
	struct timespec next;
	uint64_t step = tl->period * 1e9;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!tl->stop) {
		sample(tl);
		uint64_t now = monotonic_ns(), at = next.tv_sec * 1000000000ull + next.tv_nsec;
		do
			at += step;
		while (at <= now);
		next.tv_sec = at / 1000000000ull;
		next.tv_nsec = at % 1000000000ull;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return NULL;
}

int timeline_start(struct timeline *tl, const struct tracer *tr, double period, pid_t target)
{
	int err;

	memset(tl, 0, sizeof(*tl));
	tl->tr = tr;
	tl->pid[0] = target;
	tl->period = period;
	for (int i = 0; i < HT_MAX_PROCS; i++)
		tl->s[i].period = period;
	pthread_mutex_init(&tl->lock, NULL);
	if ((err = pthread_create(&tl->thread, NULL, sampler, tl))) {
		ht_err("cannot start the timeline's sampler: %s", strerror(err));
		return -1;
	}
	tl->running = true;
	return 0;
}

void timeline_stop(struct timeline *tl)
{
	if (!tl->running)
		return;
	tl->stop = true;
	pthread_join(tl->thread, NULL);
	tl->running = false;
	sample(tl);
}

void timeline_proc(struct timeline *tl, uint32_t slot, pid_t pid)
{
	if (!tl->running || slot >= HT_MAX_PROCS)
		return;
	pthread_mutex_lock(&tl->lock);
	tl->pid[slot] = pid;
	pthread_mutex_unlock(&tl->lock);
}

void timeline_mark(struct timeline *tl)
{
	pthread_mutex_lock(&tl->lock);
	if (!ARRAY_RESERVE(tl->marks, tl->cap_marks, tl->n_marks + 1, 64))
		tl->marks[tl->n_marks++] = monotonic_ns();
	pthread_mutex_unlock(&tl->lock);
}

struct tl_series *timeline_copy(struct timeline *tl, uint32_t slot)
{
	struct tl_series *c = NULL;

	if (!tl || !tl->tr || slot >= HT_MAX_PROCS)
		return NULL;
	pthread_mutex_lock(&tl->lock);
	const struct tl_series *s = &tl->s[slot];
	/* A profile taken while tracing (-i, --http) ends its series now, with a peak reached since the last sample. */
	if (tl->running && s->n) {
		struct ht_totals t;
		tracer_totals(tl->tr, slot, &t);
		sample_slot(&tl->s[slot], &t, monotonic_ns(), tl->pid[slot]);
	}
	size_t marks = slot == 0 ? tl->n_marks : 0;
	if (s->n && (c = malloc(sizeof(*c) + s->n * sizeof(*s->pt) + marks * sizeof(*tl->marks)))) {
		*c = *s;
		c->pt = (struct tl_point *)(c + 1);
		c->cap = c->n;
		memcpy(c->pt, s->pt, s->n * sizeof(*s->pt));
		c->marks = (uint64_t *)(c->pt + c->n);
		c->n_marks = marks;
		if (marks)
			memcpy(c->marks, tl->marks, marks * sizeof(*tl->marks));
	}
	pthread_mutex_unlock(&tl->lock);
	return c;
}

void timeline_free(struct timeline *tl)
{
	if (!tl->tr)
		return;
	timeline_stop(tl);
	for (int i = 0; i < HT_MAX_PROCS; i++)
		free(tl->s[i].pt);
	free(tl->marks);
	pthread_mutex_destroy(&tl->lock);
	memset(tl, 0, sizeof(*tl));
}
