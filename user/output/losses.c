/* The counters of bpf/heaptrace.h's HT_COUNTERS table, by name. */
#include <inttypes.h>
#include <stdio.h>

#include "output/writers.h"

#define NAME(id, name, loss) [HT_##id] = name,
#define LOSS(id, name, loss) [HT_##id] = loss,
static const char *const names[HT_COUNTER_MAX] = { HT_COUNTERS(NAME) };
static const bool losses[HT_COUNTER_MAX] = { HT_COUNTERS(LOSS) };

const char *counter_name(enum ht_counter c)
{
	return c < HT_COUNTER_MAX ? names[c] : "?";
}

bool counter_is_loss(enum ht_counter c)
{
	return c < HT_COUNTER_MAX && losses[c];
}

void output_losses(char *buf, size_t len, const uint64_t counters[HT_COUNTER_MAX], bool all)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int c = 0; c < HT_COUNTER_MAX && off < len; c++) {
		if (!all && (!losses[c] || !counters[c]))
			continue;
		off += snprintf(buf + off, len - off, "%s%s=%" PRIu64, off ? " " : "", names[c], counters[c]);
	}
}
