/*
 * The consumer of the event rings (exact mode's batching,
 * docs/fast-path.md): a thread that runs bpf/drain.bpf.c's program over
 * each registered ring every HT_RING_PERIOD_MS, or sooner when a producer
 * rings the bell, and drain_now() for whoever is about to read the maps.
 */
#ifndef HT_TRACER_DRAIN_H
#define HT_TRACER_DRAIN_H

#include <stdint.h>
#include <linux/types.h>

#include "heaptrace.h"

struct tracer;

/*
 * A process's ring as heaptrace holds it (user/inject/ring.c makes it:
 * ring_create, ring_destroy).  Defined here, not in inject/ring.h, because
 * the drain reads it and tracer/ includes no header of inject/ (the
 * include graph goes one way: inject/ includes tracer/).
 */
struct ring {
	struct ht_ring *hdr;
	struct ht_ev *slots;
	__u64 target_addr;
	int fd;
	__u32 tgid;
	__u32 exec_gen;
};

/*
 * From now on r is drained (its process must be traced: the target, or a
 * child tracer_add_proc added).  Records in r->exec_gen the process's
 * image (its execs, struct ht_totals): events drained after a later exec
 * are the old program's.  The first call loads the drain's object (or
 * waits for drain_preload()'s) and starts the drain thread.  0 or -errno,
 * unsaid (the caller says why: -ESRCH, the process is not traced; the
 * object's load error, said).
 */
int drain_register(struct tracer *tr, struct ring *r);

/* After a last full drain, r is no longer read (the caller then destroys it); its counters are kept. */
void drain_unregister(struct tracer *tr, struct ring *r);

/*
 * Synchronous: every event published in a registered ring before the call
 * is accounted in the maps when it returns.  Called before anything reads
 * the maps: by tracer_totals, tracer_counters and tracer_session_counters
 * (every profile, snapshot, /metrics and the end-of-run write read them
 * first), tracer_detach, tracer_forget_proc and tracer_forget_pid.  0, or -1 when
 * the drain's object could not be loaded (said once).  The target's ring
 * only up to its volume stop (tracer_volume_stop()).
 */
int drain_now(const struct tracer *tr);

/*
 * drain_now() until every position of r taken before the call is
 * accounted: a slot taken but not yet published by a thread that is still
 * running (a fork's other threads) stops a pass, and what follows it waits.
 * Waits up to timeout_ms for such a slot.  0, or -ETIMEDOUT.
 */
int drain_through(const struct tracer *tr, const struct ring *r, unsigned timeout_ms);

/*
 * Of slots [from, to), added to out: the rings' ring_full_waits and
 * ring_lost, and the held frees of threads found gone (thread_exit_frees,
 * unmatched_frees).
 */
void drain_counters(const struct tracer *tr, uint32_t from, uint32_t to, uint64_t out[HT_COUNTER_MAX]);

/* The drain object's own maps (fdinfo memlock) and its program, once taken (tracer_memory()). */
void drain_memory(const struct tracer *tr, uint64_t *maps, uint64_t *progs_memlock, int *progs);

/* Pairs found (user/tracer/pair.h) and, of them, pairs across two runs: for -v and the tests. */
void drain_pairs(const struct tracer *tr, uint64_t *pairs, uint64_t *carried);

/*
 * Exact mode's events may come through rings: the drain's object is loaded
 * from now on, by a thread of its own, beside the stub's programs (its
 * verification took 40-200 ms, during which a launched program's first
 * events filled its ring and it waited).  The main object's maps must
 * exist.  A failure is said at the first use, as a load's.
 */
void drain_preload(struct tracer *tr);

/* The preload waited for, if there is one: before the threads of a running process stop for the injection. */
void drain_ready(struct tracer *tr);

/* Stop the thread (tracer_close); -v says what the drain did. */
void drain_close(struct tracer *tr);

#endif
