/* The profile as read from the BPF maps: stacks x four counters, plus losses. */
#ifndef HT_PROFILE_H
#define HT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"

struct tracer;

enum ht_value { V_INUSE_SPACE, V_INUSE_OBJECTS, V_ALLOC_SPACE, V_ALLOC_OBJECTS };

struct prof_stack {
	uint64_t *pcs;          /* return addresses, innermost (the allocation site) first */
	uint32_t depth;         /* 0 for the pseudo stack of allocations whose stack was lost */
	struct ht_site c;
};

struct profile {
	struct prof_stack *stacks;
	size_t n;
	struct ht_site total;
	uint64_t counters[HT_COUNTER_MAX];
	pid_t pid;
	const char *maps;       /* the target's /proc/PID/maps text (borrowed) */
	size_t trimmed;         /* stacks cut where a frame left executable memory */
};

/* Read every stack's counters; stacks with identical frames are merged. */
int profile_read(struct profile *p, const struct tracer *tr, pid_t pid, const char *maps);
void profile_free(struct profile *p);

int64_t site_value(const struct ht_site *c, enum ht_value v);
const char *value_name(enum ht_value v);
int value_parse(const char *s, enum ht_value *v);

/* Indices of stacks ordered by value v, largest first. */
size_t *profile_order(const struct profile *p, enum ht_value v);

#endif
