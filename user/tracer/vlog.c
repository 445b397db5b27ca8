/*
 * -v: what the verifier spent on each program, as the kernel reports it
 * (log level BPF_LOG_STATS: the stats and any error, no instruction
 * trace), so that start-up's largest phase says which program it went to.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>

#include "tracer/internal.h"
#include "util/log.h"

/* Room for the stats and a failure's messages: a log that overflows fails the load (ENOSPC). */
enum { VLOG_SIZE = 16384, BPF_LOG_STATS = 4 };

/*
 * The last program the kernel refused and the verifier's last words, for
 * the one line a failed load says without -v: which program, why, on
 * which kernel.  Loads run side by side (apart.c): under a lock.
 */
static struct {
	pthread_mutex_t lock;
	char why[512];
} refusal = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Not the reason: the stats lines a log ends with, the global functions it checked, blank lines. */
static bool stats_line(const char *l, size_t n)
{
	static const char *const stats[] = { "processed ", "verification time", "stack depth", "max_states_per_insn",
					     "Func#", "Validating " };

	if (!n)
		return true;
	for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++)
		if (!strncmp(l, stats[i], strlen(stats[i])))
			return true;
	return false;
}

/* A refused program's verifier log: its last two lines that are not stats, kept as "PROG: LINE | LINE". */
static void note_refusal(const char *prog, const char *log)
{
	const char *end = log + strlen(log), *lines[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 };
	int found = 0;

	while (end > log && found < 2) {
		const char *nl = end - 1;
		while (nl > log && nl[-1] != '\n')
			nl--;
		size_t n = end - nl;
		while (n && (nl[n - 1] == '\n' || nl[n - 1] == ' '))
			n--;
		if (!stats_line(nl, n) && strncmp(nl, "-- END PROG LOAD LOG", 20)) {
			lines[found] = nl;
			lens[found++] = n;
		}
		end = nl;
	}
	if (!found)
		return;
	pthread_mutex_lock(&refusal.lock);
	if (found == 2)
		snprintf(refusal.why, sizeof(refusal.why), "%s: %.*s | %.*s", prog, (int)lens[1], lines[1], (int)lens[0],
			 lines[0]);
	else
		snprintf(refusal.why, sizeof(refusal.why), "%s: %.*s", prog, (int)lens[0], lines[0]);
	pthread_mutex_unlock(&refusal.lock);
}

void tracer_vlog_libbpf(const char *fmt, va_list ap)
{
	/* libbpf 1.1: "libbpf: prog '%s': -- BEGIN PROG LOAD LOG --\n%s-- END PROG LOAD LOG --\n" */
	if (!strstr(fmt, "BEGIN PROG LOAD LOG"))
		return;
	char *text = NULL, prog[64];
	va_list aq;
	va_copy(aq, ap);
	int n = vasprintf(&text, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;         /* text is undefined then */
	/* libbpf's warnings start "libbpf: " */
	const char *body = strstr(text, "-- BEGIN PROG LOAD LOG --\n"), *name = strstr(text, "prog '");
	if (body && name && sscanf(name, "prog '%63[^']'", prog) == 1)
		note_refusal(prog, body + strlen("-- BEGIN PROG LOAD LOG --\n"));
	free(text);
}

bool tracer_refusal(char *buf, size_t size)
{
	struct utsname u;

	pthread_mutex_lock(&refusal.lock);
	bool any = refusal.why[0];
	if (any)
		snprintf(buf, size, "the verifier of Linux %s refused %s", uname(&u) ? "(unknown)" : u.release,
			 refusal.why);
	pthread_mutex_unlock(&refusal.lock);
	return any;
}

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
			note_refusal(bpf_program__name(p), buf);
		}
		bpf_program__set_log_buf(p, NULL, 0);
		bpf_program__set_log_level(p, 0);
		free(buf);
	}
	if (len)
		ht_info("verifier: %s", line);
}
