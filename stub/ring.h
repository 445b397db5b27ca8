/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Exact mode's batching, the producer (ring.c): the stub appends the
 * events it records to the process's ring (bpf/heaptrace.h, "The event
 * ring") instead of calling a record site; heaptrace drains the ring.
 */
#ifndef HT_STUB_RING_H
#define HT_STUB_RING_H

#include "unwind.h"

/* The process's ring while batching is on, else NULL (sampled, no ring, or heaptrace gone: the sites then). */
struct ht_ring *ring_of(void);

/*
 * Append ev (kind, flags, spec and its union filled; seq and tid are
 * ring_put's) to the process's ring.  With regs, the stack is walked from them and its
 * hash goes in ev->stack, the stack itself first when the process has
 * not sent it.  0: done (appended, or counted lost: heaptrace is gone);
 * 1: the walk failed: every event appended before is drained now, and the
 * caller takes this one to its record site (the BPF side walks), in order;
 * or there is no ring (any more).  A signal handler's event over a
 * producer of its own thread never waits for the ring to drain: when its
 * walk fails it goes in with the frames the walk proved, truncated there
 * (none: stack 0 and HT_STUB_UNWALKED, its stack lost).
 */
int ring_put(struct ht_ev *ev, const struct stub_regs *regs, __u64 tp);

#endif
