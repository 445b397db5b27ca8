/* Profiles taken while tracing: numbered snapshots, growth summaries, the live view. */
#ifndef HT_SNAPSHOT_H
#define HT_SNAPSHOT_H

#include <stdbool.h>

#include "output/output.h"
#include "profile/growth.h"
#include "profile/profile.h"
#include "process/target.h"
#include "tracer/tracer.h"

struct snapshots {
	const char *prefix;             /* files PREFIX.0001.heap, ... (output_tagged_path for html, svg) */
	enum ht_format fmt;
	enum ht_value value;
	size_t top;
	bool diff;                      /* --diff: a growth summary on stderr per snapshot */
	bool live;                      /* -f top on a terminal: redraw instead of files */
	const struct profile_source *src;
	int seq;
	int failed;                     /* snapshots that could not be written */
	struct profile prev;
	bool have_prev;
	/* The snapshots before prev, oldest first: with prev and the next, the series growth judges. */
	struct profile older[GROWTH_K - 2];
	int n_older;
	struct target *t;
};

/* monitor_run's tick: read the maps and write the next snapshot. */
void snapshot_tick(void *ss);

/* Write p as the next snapshot (the final one, after tracing stopped). */
int snapshot_write(struct snapshots *ss, struct profile *p);

/* The file name of the at-peak profile for this output and format. */
void snapshot_peak_path(const char *output, const char *prefix, pid_t pid, enum ht_format fmt, char *buf,
			size_t len);

void snapshots_free(struct snapshots *ss);

#endif
