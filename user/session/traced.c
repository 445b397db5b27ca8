/*
 * Which processes and threads are the session's, and how their files are
 * reached: what every file of session/ that stops or reads a process asks
 * (children.c, procset.c, procstub.c, walk.c, fastpath.c), kept apart
 * from the lifecycle so that they need not call back into session.c.
 */
#include <stdio.h>

#include "session/state.h"

/* The root prefix that reaches a process's files: our own for a launched command's tree. */
void session_proc_root(const struct session *s, pid_t pid, char *buf, size_t len)
{
	if (s->t.launched)
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len, "/proc/%d/root", pid);
}

bool session_traced_by_us(void *arg, pid_t tid)
{
	struct session *s = arg;

	/* -p without --follow-fork: the threads seized (one that could not be runs on, untraced). */
	if (s->tc.all && !s->tc.follow)
		return s->tc.seized && tracee_has(&s->tc, tid);
	return s->tc.seized && (s->tc.follow || tid == s->t.pid);
}
