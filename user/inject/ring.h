/*
 * Exact mode's batching (docs/fast-path.md, bpf/heaptrace.h "The event
 * ring"): one ring of events per process, a memfd that the target maps
 * read-write and shared (data, never executable) and heaptrace maps too.
 * The stub (stub/ring.c) produces; heaptrace's drain (tracer/drain.h)
 * consumes.
 */
#ifndef HT_INJECT_RING_H
#define HT_INJECT_RING_H

#include <stdbool.h>
#include <linux/types.h>

#include "heaptrace.h"

/* struct ring and drain_register() are the drain's: tracer/ includes nothing of inject/. */
#include "tracer/drain.h"

/* A new ring for tgid: a memfd, mapped in heaptrace, every seq its index.  0 or -errno. */
int ring_create(struct ring *r, __u32 tgid);

/* heaptrace's side goes (the target's mapping stays: a thread may be inside the stub). */
void ring_destroy(struct ring *r);

/* HEAPTRACE_BATCH=0: no batching, a record site a call (for comparison, and the tests). */
bool ring_batch_off(void);

struct inject;
struct remote;
struct probe_plan;
struct tracer;

/*
 * With every thread of the target stopped and its stub mapped (in->base),
 * before it is enabled: batching on or off for this session.  On when
 * exact, the stub walks, every function of the plan goes through it, none
 * reads memory only BPF can read (a wrapping free is the stub's, called
 * with a nesting slot: STUB_FN_WRAPS), HEAPTRACE_BATCH is not 0, and the drain takes
 * the ring: the ring (an earlier session's again when no producer is
 * inside it, else a new one) mapped in the target, the stub told, its cache
 * of sent stacks emptied.  Off: the stub told there is no ring.  0, or
 * -errno when the stub's data could not be written (the stub must not be
 * enabled).
 */
int ring_install(struct inject *in, struct remote *r, const struct probe_plan *plan, struct tracer *tr);

/*
 * Every event in's process took a slot for so far accounted now
 * (drain_through: a thread of it still running may publish a slot late,
 * and the slots after it wait for it), when it batches: before a forked
 * child's first call, whose record sites account at once (its free of a
 * block the parent allocated must find that block).
 */
void ring_sync(const struct inject *in);

/* The session ends (or the process exec'd): the drain lets the ring go, heaptrace's side is unmapped. */
void ring_release(struct inject *in);

#endif
