/*
 * /debug/pprof/allocs?seconds=N and heap?seconds=N: what changed over the
 * next N seconds, as Go's net/http/pprof answers them (docs/output-formats.md,
 * "Delta profiles").  The request is answered by the profile thread of
 * http.c; this holds the rules: which N, and one delta at a time per client.
 */
#ifndef HT_DELTA_H
#define HT_DELTA_H

#include <stdbool.h>
#include <microhttpd.h>

#include "profile/profile.h"

#define DELTA_MAX_SECONDS 300   /* longer windows are a job for -i snapshots */
#define DELTA_CLIENTS 16        /* deltas running at once, all clients together */
#define DELTA_KEY 64

/*
 * The seconds parameter: a whole number in 1..DELTA_MAX_SECONDS.  0, or -1
 * with *why the one-line answer for a 400.
 */
int delta_seconds(const char *s, const char *debug, unsigned *sec, const char **why);

/* Who asks, as the one-at-a-time rule counts clients: the peer's address, or a unix socket's peer uid. */
void delta_client(struct MHD_Connection *c, char key[DELTA_KEY]);

/* Take the client's one delta slot: false when it has one running (or all slots are busy). */
bool delta_claim(const char key[DELTA_KEY]);
void delta_release(const char key[DELTA_KEY]);

/* now - before, stacks matched by frames, spanning the window (its duration); -1 on no memory. */
int delta_profile(const struct profile *before, const struct profile *now, struct profile *d);

#endif
