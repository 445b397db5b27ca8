/*
 * Snapshots besides -i's clock, taken at monitor_run's poll: by volume
 * (--interval-bytes), on demand (SIGUSR1) and before an OOM kill
 * (--snapshot-at-rss).  They are -i's numbered snapshots, one sequence.
 */
#include <inttypes.h>

#include "session/monitor.h"
#include "session/state.h"
#include "util/log.h"

/* The poll's period when it has something to watch: the granularity of --interval-bytes and --snapshot-at-rss. */
#define POLL_PERIOD 0.01

static void snapshot_now(struct session *s)
{
	if (s->src.timeline)
		timeline_mark(&s->tl);
	snapshot_tick(s->ss);
}

/*
 * --interval-bytes: a snapshot when the target's allocated bytes reached
 * the next multiple.  The record sites' and uprobes' counts are the
 * program's as it runs: one snapshot however many multiples it passed
 * since the last poll.  The event ring is drained up to the multiple and
 * no further (tracer_volume_stop()), so there each multiple gets its own,
 * holding what was allocated up to it.  Whether it took one.
 */
static bool volume_check(struct session *s)
{
	uint64_t every = s->o->interval_bytes;
	struct ht_totals tt;

	tracer_totals(&s->tr, 0, &tt);
	if (tt.alloc_bytes < s->next_bytes)
		return false;
	snapshot_now(s);
	s->next_bytes = (tt.alloc_bytes / every + 1) * every;
	tracer_volume_stop(&s->tr, s->next_bytes);
	return true;
}

static void poll_tick(void *arg, bool usr1)
{
	struct session *s = arg;
	const struct trace_opts *o = s->o;
	uint64_t rss;

	if (usr1) {
		snapshot_now(s);
		ht_err("SIGUSR1: snapshot %d", s->ss->seq);
		return;
	}
	if (oom_watch_crossed(&s->oom, s->t.pid, &rss)) {
		snapshot_now(s);
		ht_err("%s at %" PRIu64 " bytes (--snapshot-at-rss %" PRIu64 "): snapshot %d",
		       *s->oom.usage ? "memory cgroup usage" : "RSS", rss, o->snapshot_at_rss, s->ss->seq);
	}
	if (o->interval_bytes)
		volume_check(s);
}

void session_watch_stop(struct session *s)
{
	/*
	 * The multiples the ring still holds back (a program that ended
	 * before the poll came): each its snapshot, as the poll would have
	 * taken.  Each round passes one at least, within what was allocated.
	 */
	if (s->o->interval_bytes)
		while (volume_check(s))
			;
	tracer_volume_stop(&s->tr, 0);
}

void session_watch_start(struct session *s)
{
	const struct trace_opts *o = s->o;

	oom_watch_start(&s->oom, s->t.pid, o->snapshot_at_rss);
	s->next_bytes = o->interval_bytes;
	tracer_volume_stop(&s->tr, s->next_bytes);
	/* Without a threshold the poll is SIGUSR1's alone. */
	monitor_on_poll(poll_tick, s, o->interval_bytes || o->snapshot_at_rss ? POLL_PERIOD : 1e9);
}
