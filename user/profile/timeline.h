/*
 * The heap over time (-f html): each traced process's in-use bytes and
 * live blocks, sampled from the BPF totals by a thread of its own while
 * tracing (the ptrace loop, snapshots and symbol tables cannot delay it),
 * with the exact peak put in between samples, the process's RSS beside
 * them, and the times of -i snapshots.
 */
#ifndef HT_TIMELINE_H
#define HT_TIMELINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"

struct tracer;

/* 25 samples a second: a loaded machine that wakes the sampler late, and so skips some, still gives 20. */
#define TL_PERIOD 0.04
#define TL_MAX_POINTS (1u << 20)        /* per process: past it, the resolution halves */
#define TL_NO_OBJECTS INT64_MIN         /* a peak point: its live blocks are not known */
#define TL_NO_RSS (-1)                  /* a peak point, or the process was gone */

struct tl_point {
	uint64_t ns;                    /* CLOCK_MONOTONIC */
	int64_t bytes;
	int64_t objects;                /* TL_NO_OBJECTS at the peak point */
	int64_t rss;                    /* resident bytes (anon + file + shmem), or TL_NO_RSS */
	int64_t rss_own;                /* of rss, heaptrace's own mappings' (at most a second old); TL_NO_RSS with it */
};

/*
 * One process's series.  A profile holds a copy (profile.timeline): one
 * allocation, the points and marks after the struct, freed with free().
 */
struct tl_series {
	struct tl_point *pt;
	size_t n, cap;
	double period;                  /* seconds between samples */
	uint64_t peak_ns;               /* the peak already in the series */
	uint64_t *marks;                /* -i snapshot times (in the target's copy only) */
	size_t n_marks;
};

struct timeline {
	const struct tracer *tr;
	double period;
	struct tl_series s[HT_MAX_PROCS];       /* by process slot */
	pid_t pid[HT_MAX_PROCS];                /* by process slot, for its RSS; 0: not known yet */
	uint64_t *marks;
	size_t n_marks, cap_marks;
	pthread_mutex_t lock;
	pthread_t thread;
	bool running;
	volatile bool stop;
};

/* Sample every period seconds from now on, until timeline_stop; target is slot 0's pid.  0, or -1 (printed). */
int timeline_start(struct timeline *tl, const struct tracer *tr, double period, pid_t target);

/* No more periodic samples; one last one, of the heap at the stop. */
void timeline_stop(struct timeline *tl);

/* The process in a slot is pid (the target's at the start, a followed child's when added). */
void timeline_proc(struct timeline *tl, uint32_t slot, pid_t pid);

/* A -i snapshot is taken now. */
void timeline_mark(struct timeline *tl);

/* A copy of the series of a process slot, for a profile of it; NULL when it has none. */
struct tl_series *timeline_copy(struct timeline *tl, uint32_t slot);

void timeline_free(struct timeline *tl);

#endif
