/* Waiting while the target runs traced: signals, the duration, the target's end. */
#ifndef HT_MONITOR_H
#define HT_MONITOR_H

#include "process/tracee.h"

enum stop_reason { STOP_TARGET_EXITED, STOP_SIGNAL, STOP_DURATION };

struct stop {
	enum stop_reason why;
	int signo;          /* STOP_SIGNAL: SIGINT or SIGTERM */
	bool sent_to_us;    /* kill(2)ed to heaptrace alone, not from the terminal to the group */
};

/* Call before creating the target: the signals we wait for are taken from then on. */
int monitor_init(void);

/*
 * Returns when tracing should stop.  duration <= 0 means no limit.  With
 * interval > 0, tick(arg) is called every interval seconds meanwhile.
 */
struct stop monitor_run(struct tracee *tc, double duration, double interval, void (*tick)(void *), void *arg);

/* After the stop: a second SIGINT or SIGTERM ends heaptrace at once. */
void monitor_release_signals(void);

#endif
