/*
 * -v: what the verifier spent on each program, as the kernel reports it
 * (log level BPF_LOG_STATS: the stats and any error, no instruction
 * trace), so that start-up's largest phase says which program it went to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "tracer/internal.h"
#include "util/log.h"

/* Room for the stats and a failure's messages: a log that overflows fails the load (ENOSPC). */
enum { VLOG_SIZE = 16384, BPF_LOG_STATS = 4 };

void tracer_vlog_arm(struct bpf_object *obj)
{
	struct bpf_program *p;

	if (!ht_verbose)
		return;
	bpf_object__for_each_program(p, obj) {
		char *buf = bpf_program__autoload(p) ? calloc(1, VLOG_SIZE) : NULL;
		if (buf && !bpf_program__set_log_buf(p, buf, VLOG_SIZE))
			bpf_program__set_log_level(p, BPF_LOG_STATS);
		else
			free(buf);
	}
}

void tracer_vlog_report(struct bpf_object *obj)
{
	char line[1024];
	size_t len = 0;
	struct bpf_program *p;

	line[0] = '\0';
	bpf_object__for_each_program(p, obj) {
		size_t size;
		char *buf = (char *)bpf_program__log_buf(p, &size);
		if (!buf)
			continue;
		const char *t = strstr(buf, "verification time "), *n = strstr(buf, "processed ");
		unsigned long us = 0, insns = 0;
		if (t && n && sscanf(t, "verification time %lu usec", &us) == 1 &&
		    sscanf(n, "processed %lu insns", &insns) == 1) {
			if (len < sizeof(line))
				len += snprintf(line + len, sizeof(line) - len, "%s%s %.1f ms (%lu insns)",
						len ? ", " : "", bpf_program__name(p), us / 1000.0, insns);
		} else if (buf[0] && bpf_program__fd(p) < 0) {
			/* Not loaded: the kernel's reason (libbpf prints no log it was handed a buffer for). */
			buf[size - 1] = '\0';
			ht_info("verifier log of %s:\n%s", bpf_program__name(p), buf);
		}
		bpf_program__set_log_buf(p, NULL, 0);
		bpf_program__set_log_level(p, 0);
		free(buf);
	}
	if (len)
		ht_info("verifier: %s", line);
}
