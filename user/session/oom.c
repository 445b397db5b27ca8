#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/oom.h"
#include "util/log.h"
#include "util/procfs.h"

/* A limit this high is none (cgroup v1 writes 2^63 rounded down to a page). */
#define NO_LIMIT (1ull << 62)

static bool read_u64(const char *path, uint64_t *v)
{
	char *text = read_text_file(path);
	bool ok = text && (text[0] >= '0' && text[0] <= '9');

	if (ok)
		*v = strtoull(text, NULL, 10);
	free(text);
	return ok;
}

/* "oom_kill N" in a memory.events (v2) or memory.oom_control (v1) file. */
static uint64_t oom_kills_in(const char *path)
{
	char *text = *path ? read_text_file(path) : NULL, *at;
	uint64_t n = 0;

	if (text && (at = strstr(text, "oom_kill ")))
		n = strtoull(at + 9, NULL, 10);
	free(text);
	return n;
}

/*
 * The memory cgroup of pid: v1's memory controller line of
 * /proc/PID/cgroup, else the cgroup2 line under the unified mount of a
 * hybrid machine or /sys/fs/cgroup.
 */
static void find_cgroup(struct oom_watch *w, pid_t pid)
{
	char path[64], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *ctl = strchr(line, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!cg)
			continue;
		*cg++ = '\0';
		ctl++;
		static const char *const v2_roots[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
		char dir[4096], limit[4300];
		uint64_t max = UINT64_MAX;
		if (!strcmp(ctl, "memory")) {
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup/memory%.3900s", cg);
			snprintf(limit, sizeof(limit), "%s/memory.limit_in_bytes", dir);
			if (!read_u64(limit, &max))
				continue;
			snprintf(w->events, sizeof(w->events), "%s/memory.oom_control", dir);
			if (max < NO_LIMIT)
				snprintf(w->usage, sizeof(w->usage), "%s/memory.usage_in_bytes", dir);
			break;
		}
		if (*ctl || *w->events)
			continue;
		for (int r = 0; r < 2; r++) {
			snprintf(dir, sizeof(dir), "%s%.3900s", v2_roots[r], cg);
			snprintf(limit, sizeof(limit), "%s/memory.max", dir);
			if (access(limit, R_OK))
				continue;
			snprintf(w->events, sizeof(w->events), "%s/memory.events", dir);
			if (read_u64(limit, &max) && max < NO_LIMIT)   /* "max": none */
				snprintf(w->usage, sizeof(w->usage), "%s/memory.current", dir);
			break;
		}
	}
	fclose(f);
}

void oom_watch_start(struct oom_watch *w, pid_t pid, uint64_t at)
{
	memset(w, 0, sizeof(*w));
	w->at = at;
	find_cgroup(w, pid);
	w->kills0 = oom_kills_in(w->events);
	ht_info("memory cgroup: %s; events %s", *w->usage ? w->usage : "no limit", *w->events ? w->events : "none");
}

bool oom_watch_crossed(struct oom_watch *w, pid_t pid, uint64_t *now)
{
	char path[64];
	uint64_t v = 0;

	if (!w->at || w->crossed)
		return false;
	if (*w->usage) {
		if (!read_u64(w->usage, &v))
			return false;
	} else {
		/* statm's second field: resident pages. */
		snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
		char *text = read_text_file(path), *sp = text ? strchr(text, ' ') : NULL;
		if (sp)
			v = strtoull(sp + 1, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
		free(text);
	}
	if (v < w->at)
		return false;
	w->crossed = true;
	*now = v;
	return true;
}

void oom_say(struct oom_watch *w, struct profile *p, pid_t pid, bool main_target, bool no_tracepoint,
	     bool sigkilled)
{
	/* Without the tracepoint: the cgroup counted a kill, and the target died of SIGKILL. */
	if (main_target && no_tracepoint && sigkilled && !p->counters[HT_OOM_KILLS] &&
	    oom_kills_in(w->events) > w->kills0)
		p->counters[HT_OOM_KILLS] = 1;
	if (p->counters[HT_OOM_KILLS])
		ht_err("PID %d (%s) was killed by the kernel's OOM killer; its profile is the heap as it stood "
		       "at the kill", (int)pid, p->name ? p->name : "?");
}
