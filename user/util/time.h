/* The monotonic clock (bpf_ktime_get_ns's), read the two ways heaptrace measures with it. */
#ifndef HT_TIME_H
#define HT_TIME_H

#include <stdint.h>

uint64_t monotonic_ns(void);

/* Milliseconds with their fraction: for the durations -v prints. */
double now_ms(void);

#endif
