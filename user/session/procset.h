/*
 * Processes traced beside the target: -p PID,PID..., --cgroup DIR, and
 * under --follow-fork the target's descendants already running.
 */
#ifndef HT_PROCSET_H
#define HT_PROCSET_H

struct session;
struct trace_opts;

/* --cgroup: its processes now, into o->pids; the first is the target (o->pid).  0 or -1 (printed). */
int procset_target(struct trace_opts *o);
/* After the target's attach: every other process traced; one that cannot be is skipped with one line. */
void procset_adopt(struct session *s);
/* --cgroup: processes that joined it since (moved in) traced too; arg: the session. */
void procset_poll(void *arg);

#endif
