/*
 * The phases of putting the stub in and taking it out, for the SIGKILL
 * sweep (scenario killsweep, docs/fast-path.md): HEAPTRACE_KILL_AT=NAME[:N]
 * makes heaptrace SIGKILL itself the N-th time (1 unless given) it reaches
 * phase NAME, which is what a SIGKILL from outside does at that instant;
 * HEAPTRACE_PHASES=1 prints each phase reached ("heaptrace: phase NAME N").
 * Not an option: a test hook, read from the environment once.
 */
#ifndef HT_INJECT_PHASE_H
#define HT_INJECT_PHASE_H

#include <stdbool.h>

void inject_phase(const char *name);
/* Whether either is asked for: a phase that costs a call of its own to reach is marked only then. */
bool inject_phases_on(void);

#endif
