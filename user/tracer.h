/* The loaded BPF object: its configuration, uprobe links and counters. */
#ifndef HT_TRACER_H
#define HT_TRACER_H

#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"

enum tracer_prog { PROG_ALLOC_ENTER, PROG_ALLOC_RETURN, PROG_FREE_ENTER };

struct tracer_config {
	pid_t tgid;
	uint32_t max_live;      /* live blocks tracked */
	uint32_t max_stacks;    /* distinct stacks */
	const struct ht_alloc_spec *specs;
	int n_specs;
};

struct tracer {
	struct heaptrace *skel;
	struct bpf_link **links;
	int n_links;
	struct bpf_link *exit_link;     /* thread exits, to drop their in-flight calls */
};

/* Open, size and load the BPF object.  Returns 0 or -1 with the error printed. */
int tracer_load(struct tracer *tr, const struct tracer_config *cfg);

/* Attach a program at a file offset of an object, for one process, with a cookie. */
int tracer_attach(struct tracer *tr, enum tracer_prog prog, const char *path, uint64_t offset,
		  uint32_t cookie, pid_t pid);

/* Stop tracing: remove every uprobe, keep the maps readable. */
void tracer_detach(struct tracer *tr);
void tracer_close(struct tracer *tr);

/* Sum the per-CPU event and loss counters. */
void tracer_counters(const struct tracer *tr, uint64_t out[HT_COUNTER_MAX]);
const char *tracer_counter_name(enum ht_counter c);

/* Map file descriptors, for reading the profile. */
int tracer_sites_fd(const struct tracer *tr);
int tracer_stacks_fd(const struct tracer *tr);

#endif
