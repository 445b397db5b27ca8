#include <inttypes.h>
#include <stdio.h>

#include "output/output.h"
#include "tracer/tracer.h"

void output_losses(char *buf, size_t len, const uint64_t counters[HT_COUNTER_MAX], bool all)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int c = 0; c < HT_COUNTER_MAX && off < len; c++) {
		bool loss = c != HT_ALLOCS && c != HT_FREES && c != HT_FAILED_ALLOCS && c != HT_RESETS &&
			    c != HT_RESET_OBJECTS && c != HT_EXECS && c != HT_EXEC_DROPPED &&
			    c != HT_INHERITED_FREES && c != HT_UNWIND_FP_FRAMES &&
			    c != HT_STACKS_MAX_DEPTH;
		if (!all && (!loss || !counters[c]))
			continue;
		off += snprintf(buf + off, len - off, "%s%s=%" PRIu64, off ? " " : "",
				tracer_counter_name(c), counters[c]);
	}
}
