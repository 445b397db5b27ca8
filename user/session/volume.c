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
	if (o->interval_bytes) {
		struct ht_totals tt;
		tracer_totals(&s->tr, 0, &tt);
		/* One snapshot however many multiples were passed since the last poll. */
		if (tt.alloc_bytes >= s->next_bytes) {
			snapshot_now(s);
			s->next_bytes = (tt.alloc_bytes / o->interval_bytes + 1) * o->interval_bytes;
		}
	}
}

void session_watch_start(struct session *s)
{
	const struct trace_opts *o = s->o;

	oom_watch_start(&s->oom, s->t.pid, o->snapshot_at_rss);
	s->next_bytes = o->interval_bytes;
	/* Without a threshold the poll is SIGUSR1's alone. */
	monitor_on_poll(poll_tick, s, o->interval_bytes || o->snapshot_at_rss ? POLL_PERIOD : 1e9);
}
