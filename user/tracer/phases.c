/*
 * Where a load's time goes (-v, tracer.times): libbpf has no hooks for its
 * phases, so they are timed from its debug messages; libbpf's other
 * messages go to stderr at -v only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "tracer/state.h"
#include "tracer/internal.h"
#include "util/log.h"
#include "util/time.h"

/*
 * When libbpf said what, during a load: its phases have no hooks, but
 * their debug messages come in a known order (kernel BTF, maps, CO-RE
 * relocations, then the programs).
 */
static __thread struct {
	double btf, first_map, last_map, last_core;
} marks;            /* per thread: the stub's programs load side by side (apart.c) */

__attribute__((format(printf, 2, 0))) static int libbpf_log(enum libbpf_print_level level, const char *fmt,
							    va_list ap)
{
	if (level == LIBBPF_DEBUG) {
		if (strstr(fmt, "loading kernel BTF"))
			marks.btf = now_ms();
		else if (strstr(fmt, "created successfully")) {
			marks.last_map = now_ms();
			if (!marks.first_map)
				marks.first_map = marks.last_map;
		} else if (strstr(fmt, "CO-RE relocating")) {
			marks.last_core = now_ms();
		}
		return 0;
	}
	/* libbpf's own chatter is for -v; heaptrace reports failures in one line itself. */
	if (level == LIBBPF_WARN && !ht_verbose) {
		tracer_vlog_libbpf(fmt, ap);
		return 0;
	}
	if (!ht_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Load obj, with libbpf's phases added to *times. */
int tracer_timed_load(struct tracer_times *times, struct bpf_object_skeleton *s)
{
	double t0 = now_ms();

	memset(&marks, 0, sizeof(marks));
	tracer_vlog_arm(*s->obj);
	int err = bpf_object__load_skeleton(s);
	double t1 = now_ms();
	tracer_vlog_report(*s->obj);
	/* Each mark falls back on the one before it when libbpf did not say it. */
	double btf = marks.btf ? marks.btf : t0, maps = marks.last_map ? marks.last_map : btf;
	double core = marks.last_core > maps ? marks.last_core : maps;
	times->btf_ms += btf - t0;
	times->maps_ms += maps - btf;
	times->core_ms += core - maps;
	times->verify_ms += t1 - core;
	return err;
}

void tracer_phases_hook(void)
{
	libbpf_set_print(libbpf_log);
}
