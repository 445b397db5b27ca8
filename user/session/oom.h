/*
 * The kernel's OOM killer and the memory before it: who was killed (the
 * oom_kills counter, or the memory cgroup's events where the tracepoint is
 * missing) and --snapshot-at-rss's one snapshot on the way up.
 */
#ifndef HT_SESSION_OOM_H
#define HT_SESSION_OOM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"

struct oom_watch {
	char usage[4200];       /* the memory cgroup's usage file; "" when it has no limit */
	char events[4200];      /* its events file (oom_kill N); "" when not found */
	uint64_t kills0;        /* oom_kill there when tracing began */
	uint64_t at;            /* --snapshot-at-rss; 0: none */
	bool crossed;           /* its snapshot is taken */
};

/* When tracing begins: the memory cgroup of pid, and the threshold. */
void oom_watch_start(struct oom_watch *w, pid_t pid, uint64_t at);

/* At a poll: true once, when pid's RSS (or the limited cgroup's usage) first reached w->at. */
bool oom_watch_crossed(struct oom_watch *w, pid_t pid, uint64_t *now);

/*
 * A profile read at the end: said on stderr when its process was killed
 * by the OOM killer.  no_tracepoint: the kill is taken from the cgroup's
 * events instead (the target's own profile, killed by SIGKILL).
 */
void oom_say(struct oom_watch *w, struct profile *p, pid_t pid, bool main_target, bool no_tracepoint,
	     bool sigkilled);

#endif
