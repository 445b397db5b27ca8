/* A stub's jumps taken out of a process before uprobes go on it (reclaim.c). */
#ifndef HT_INJECT_RECLAIM_H
#define HT_INJECT_RECLAIM_H

#include <stdbool.h>
#include <sys/types.h>

#include "inject/remote.h"

struct probe_plan;

/*
 * Before uprobes go on a process's malloc family: each function that still
 * jumps into a heaptrace stub (an earlier heaptrace was SIGKILLed, or the
 * process was forked from one that had the jump) gets its file's bytes
 * back; a uprobe on a jump would break it (inject.c says how).  _reclaim:
 * every thread of r stopped; _held: a child held before its first
 * instruction (not written when it shares parent's memory: vfork);
 * _running: looked at without stopping, stopped (remote_stop
 * with traced, arg) only when there is something to restore.  Each returns
 * how many functions jumped, or -1 when one still does (printed).
 */
int inject_reclaim(struct remote *r, const struct probe_plan *plan);
int inject_reclaim_held(pid_t pid, const struct probe_plan *plan);
int inject_reclaim_running(pid_t pid, const struct probe_plan *plan, bool (*traced)(void *arg, pid_t tid), void *arg);

/* Whether two processes share their memory (a vfork child and its parent): kcmp(KCMP_VM). */
bool inject_shares_memory(pid_t a, pid_t b);

#endif
