/* The loaded BPF object: its configuration, uprobe links and counters. */
#ifndef HT_TRACER_H
#define HT_TRACER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"
/* The folder's whole interface, for the folders before it: */
#include "tracer/levels.h"
#include "tracer/links.h"
#include "tracer/maps.h"
#include "tracer/memory.h"
#include "tracer/programs.h"
#include "tracer/release.h"
#include "tracer/state.h"

/*
 * Open, size and load the BPF object.  Returns 0 or -1 with the error
 * printed.  A kernel that cannot load the session program gets the plain
 * ones instead (tr->session says which).
 */
int tracer_load(struct tracer *tr, const struct tracer_config *cfg);

void tracer_close(struct tracer *tr);

/*
 * The event and loss counters of the process in a slot (0: the target),
 * summed over CPUs.  These three readers, which every profile, snapshot,
 * /metrics and the end-of-run write go through, drain the event rings
 * first (drain_now()).
 */
void tracer_counters(const struct tracer *tr, uint32_t slot, uint64_t out[HT_COUNTER_MAX]);
/* The same summed over every process slot: the whole session's. */
void tracer_session_counters(const struct tracer *tr, uint64_t out[HT_COUNTER_MAX]);
/* Every event the rings hold, into the maps now (as the readers above do first). */
void tracer_drain(const struct tracer *tr);

/* --unwind dwarf: the CFI row array (mmappable), the objects map, and flushing the per-process caches. */
uint32_t tracer_unwind_capacity(const struct tracer *tr);
/* vm.mmap_min_addr (at least 1): no frame lies below it, for the walks. */
uint64_t tracer_min_frame_addr(const struct tracer *tr);
int tracer_unwind_rows_fd(const struct tracer *tr);
int tracer_unwind_objects_fd(const struct tracer *tr);
/* Empty the per-process code caches of slots from_slot and up. */
void tracer_unwind_flush(const struct tracer *tr, uint32_t from_slot);
void tracer_unwind_set(const struct tracer *tr, uint32_t slot, const struct ht_unwind_proc *p);

/* Map file descriptors, for reading the profile. */
int tracer_sites_fd(const struct tracer *tr);
int tracer_stacks_fd(const struct tracer *tr);
int tracer_arena_blocks_fd(const struct tracer *tr);
int tracer_arenas_fd(const struct tracer *tr);

/* The totals and peak the BPF side keeps for a process slot (0: the target). */
void tracer_totals(const struct tracer *tr, uint32_t proc, struct ht_totals *t);

/*
 * --interval-bytes: the target's event ring is drained no further than the
 * allocation that brings its alloc_bytes to bytes, until the next call
 * moves it on (0: no stop; set it so before the last drains).  The record
 * sites and uprobes count as they go: the poll sees them within its period.
 */
void tracer_volume_stop(struct tracer *tr, uint64_t bytes);

/* --follow-fork: trace a child in a slot (1 .. HT_MAX_PROCS-1) whose parent is in another. */
int tracer_add_proc(struct tracer *tr, pid_t pid, uint32_t slot, uint32_t parent);

/* Descriptors specs[from .. from+n) into the loaded object, before any link carries their cookies.  0 or -1. */
int tracer_set_specs(struct tracer *tr, const struct ht_alloc_spec *specs, int from, int n);

/*
 * The stub in process pid (user/inject/) keeps its nesting table at depth
 * and its count of threads inside a call at active: uprobes read it (a
 * call they trace made inside one the stub called is nested in it).
 * 0 or -errno.
 */
int tracer_set_stub(struct tracer *tr, pid_t pid, uint64_t active, uint64_t depth);

/*
 * A process slot's stacks, arenas, totals and peak, gone: its process
 * executed a new program (stopped at the exec, its blocks already dropped),
 * whose profile starts afresh.  Its exec counts stay.  Returns the stacks
 * forgotten.
 */
size_t tracer_forget_proc(struct tracer *tr, uint32_t slot);

/* Bytes of a stored stack of max_depth frames (a prefix of struct ht_stack). */
uint32_t tracer_stack_size(uint32_t max_depth);
uint32_t tracer_stack_value_size(const struct tracer *tr);

#endif
