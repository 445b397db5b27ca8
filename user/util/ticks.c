#include <time.h>
#include <x86intrin.h>

#include "heaptrace.h"
#include "util/ticks.h"
#include "util/time.h"

/*
 * The monotonic time and the counter at one moment: the counter read on
 * both sides of the clock, their middle.  A pair with more than 20 µs
 * between the reads (preempted, an interrupt) is taken again.
 */
static void pair(uint64_t *ns, uint64_t *ticks)
{
	for (int i = 0; i < 4; i++) {
		uint64_t a = __rdtsc();
		*ns = monotonic_ns();
		uint64_t b = __rdtsc();
		*ticks = (a + (b - a) / 2) >> HT_EV_TICK_SHIFT;
		if (b - a < 20000 * 4)  /* ~20 µs of a counter of up to 4 GHz */
			break;
	}
}

void tick_clock_start(struct tick_clock *c)
{
	pair(&c->ns, &c->ticks);
}

uint64_t tick_clock_now(const struct tick_clock *c, uint64_t *ns, uint64_t *ticks)
{
	pair(ns, ticks);
	/* The first pass, right after the start: the rest of a millisecond waited once, for a rate. */
	if (*ns < c->ns + 1000000) {
		struct timespec rest = { 0, (long)(c->ns + 1000000 - *ns) };
		nanosleep(&rest, NULL);
		pair(ns, ticks);
	}
	if (*ns < c->ns + 1000000 || *ticks <= c->ticks)
		return 0;
	return (uint64_t)(((unsigned __int128)(*ns - c->ns) << HT_TICK_MULT_SHIFT) / (*ticks - c->ticks));
}
