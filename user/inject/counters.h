#ifndef HT_INJECT_COUNTERS_H
#define HT_INJECT_COUNTERS_H
/* The stub's counters as heaptrace reads them (counters.c). */
#include <stdbool.h>
#include <stdint.h>

#include "heaptrace.h"
#include "inject/state.h"

struct tracer;

/* The stub's losses, added to the BPF side's counters (read while the process lives, then the last reading). */
void inject_counters(struct inject *in, uint64_t counters[HT_COUNTER_MAX]);

/* to, the stub of from's process's next program (exec): from's losses, as earlier ones (to may be from). */
void inject_carry(struct inject *to, const struct inject *from);

/*
 * Do the stub's recorded calls reach heaptrace?  slot: the process's in
 * tr's counters; now: seconds.  True, once, when a second went by after
 * the stub first recorded a call and nothing of it arrived
 * (stub_undelivered: the kernel's uprobes do not fire at the record
 * sites, the drain does not run): the profile would be empty.
 */
bool inject_check_delivery(struct inject *in, const struct tracer *tr, uint32_t slot, double now);

#endif
