/* Waiting while the target runs traced: signals, the duration, the target's end. */
#ifndef HT_MONITOR_H
#define HT_MONITOR_H

#include <stdbool.h>

#include "process/tracee.h"

enum stop_reason { STOP_TARGET_EXITED, STOP_SIGNAL, STOP_DURATION, STOP_UNDELIVERED };

struct stop {
	enum stop_reason why;
	int signo;          /* STOP_SIGNAL: SIGINT, SIGTERM or SIGHUP */
	bool sent_to_us;    /* kill(2)ed to heaptrace (or the hangup of the terminal it leads), not a key */
};

/* Call before creating the target: the signals we wait for are taken from then on. */
int monitor_init(void);

/*
 * Returns when tracing should stop.  duration <= 0 means no limit.  With
 * interval > 0, tick(arg) is called every interval seconds meanwhile.
 */
struct stop monitor_run(struct tracee *tc, double duration, double interval, void (*tick)(void *), void *arg);

/*
 * While monitor_run waits: fn(arg, false) every period seconds (at most),
 * and fn(arg, true) at once when SIGUSR1 reaches heaptrace.
 */
void monitor_on_poll(void (*fn)(void *arg, bool usr1), void *arg, double period);

/*
 * After the stop, until heaptrace exits: SIGINT, SIGTERM and SIGHUP never
 * end it (only SIGKILL does), so that the profile is written and a launched
 * command reaped.  The first one while the profile is written says
 * "writing profile, please wait"; the others say nothing.
 */
void monitor_hold_signals(void);

/*
 * The profile is written: from now on those sent to heaptrace alone are
 * passed on to the command of pidfd (a launched command heaptrace waits
 * for), as the first one was.
 */
void monitor_forward_to(int pidfd);

#endif
