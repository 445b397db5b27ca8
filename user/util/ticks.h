/*
 * The time-stamp counter as the stub stamps ring events (bpf/heaptrace_ring.h,
 * HT_EV_TICKS), held against the monotonic clock (bpf_ktime_get_ns's) so
 * that the drain can turn an event's ticks into the kernel's time.
 */
#ifndef HT_TICKS_H
#define HT_TICKS_H

#include <stdint.h>

struct tick_clock {
	uint64_t ns, ticks;     /* the first pair: the rate is measured from it */
};

void tick_clock_start(struct tick_clock *c);

/*
 * A pair taken now (the monotonic time, the counter >> HT_EV_TICK_SHIFT)
 * and the counter's rate since the start: nanoseconds a tick <<
 * HT_TICK_MULT_SHIFT (the first call may wait up to a millisecond for it; 0:
 * the counter did not move).
 */
uint64_t tick_clock_now(const struct tick_clock *c, uint64_t *ns, uint64_t *ticks);

#endif
