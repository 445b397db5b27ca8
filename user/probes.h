/* Which functions to probe, where, and with which allocator descriptor. */
#ifndef HT_PROBES_H
#define HT_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "heaptrace.h"
#include "placement.h"
#include "tracer.h"

struct probe {
	const char *func;
	uint64_t offset;        /* file offset of the probed instruction */
	uint64_t delta;         /* its distance from the function's entry */
	struct placement where;
	uint32_t spec;          /* attach cookie: index into plan.specs */
	bool is_free;
};

struct probe_plan {
	char *path;             /* the allocator object */
	struct probe probes[HT_MAX_SPECS];
	int n;
	struct ht_alloc_spec specs[HT_MAX_SPECS];
};

/*
 * Resolve the malloc family in the allocator object.  Functions it does not
 * define are skipped; without malloc and free it is an error (printed).
 */
int probes_plan_malloc(struct probe_plan *plan, const char *path, bool at_entry);

/*
 * Attach every probe of the plan for one process.  Returns 0, -1 (printed),
 * or 1 when the tracer was loaded for uprobe_multi and the kernel has none:
 * reload it without and call again.
 */
int probes_attach(const struct probe_plan *plan, struct tracer *tr, pid_t pid);

/* The plan as lines "FUNC PATH 0xOFFSET +DELTA `INSN` WHY", for scripts (--list-probes). */
void probes_print(const struct probe_plan *plan, FILE *f);

void probes_free(struct probe_plan *plan);

#endif
