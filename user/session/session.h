/*
 * A tracing session from start to end: find the target, plan the probes,
 * load the BPF side, attach, run until told to stop, detach, and write
 * every profile that was asked for, as the `trace` command's options
 * (session/opts.h) say.
 */
#ifndef HT_SESSION_H
#define HT_SESSION_H

#include "session/opts.h"

/* Trace as the options say; returns heaptrace's exit status. */
int session_run(struct trace_opts *o);

#endif
