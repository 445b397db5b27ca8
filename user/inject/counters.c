/*
 * The stub's counters as heaptrace reads them from the process's data, and
 * whether its recorded calls reach heaptrace at all.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "inject/counters.h"
#include "tracer/tracer.h"

/* The stub's counters into in->seen; the last reading stands once the process is gone. */
static void read_seen(struct inject *in)
{
	struct stub_counters c;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", in->pid);
	if (in->base && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		if (pread(fd, &c, sizeof(c), in->base + STUB_DATA_OFF + offsetof(struct stub_data, c)) == sizeof(c))
			in->seen = c;
		close(fd);
	}
}

void inject_counters(struct inject *in, uint64_t counters[HT_COUNTER_MAX])
{
	if (in->shared)
		return;         /* the parent's stub: counted there */
	/* --follow-fork reads a child's at its exit stop. */
	read_seen(in);
	counters[HT_SAMPLED_SET_FULL] += in->seen.set_full + in->earlier.set_full;
	counters[HT_CALL_MAP_FULL] += in->seen.depth_full + in->earlier.depth_full;
	counters[HT_MISSED_RETURNS] += in->seen.stale + in->earlier.stale;
	counters[HT_STUB_UNDELIVERED] += in->undelivered + in->earlier_undelivered;
}

void inject_carry(struct inject *to, const struct inject *from)
{
	to->earlier.set_full = from->earlier.set_full + from->seen.set_full;
	to->earlier.depth_full = from->earlier.depth_full + from->seen.depth_full;
	to->earlier.stale = from->earlier.stale + from->seen.stale;
	to->earlier_undelivered = from->earlier_undelivered + from->undelivered;
}

bool inject_check_delivery(struct inject *in, const struct tracer *tr, uint32_t slot, double now)
{
	uint64_t c[HT_COUNTER_MAX];

	if (in->shared || !in->enabled || in->undelivered || in->delivered)
		return false;
	/*
	 * A ring another reader drains (HEAPTRACE_RING_NODRAIN, the ring
	 * tests'): its events never reach our counters, so nothing tells.
	 */
	if (in->batching && !in->ring_tr)
		return false;
	read_seen(in);
	if (!in->seen.recorded)
		return false;
	/* Only until the answer is known: the counters' read drains the rings first. */
	tracer_counters(tr, slot, c);
	/* What a recorded call becomes at a record site or in the drain, whichever way it went. */
	if (c[HT_ALLOCS] || c[HT_FREES] || c[HT_UNMATCHED_FREES] || c[HT_FAILED_ALLOCS] || c[HT_RING_EVENTS] ||
	    c[HT_ARENA_RESETS] || c[HT_STUB_WALKS]) {
		in->delivered = true;
		return false;
	}
	if (!in->recorded_at) {
		in->recorded_at = now;
		return false;
	}
	/* The drain runs every 10 ms, a record site at the call: a second is many times either. */
	in->undelivered = now - in->recorded_at >= 1.0;
	return in->undelivered;
}
