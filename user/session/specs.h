/*
 * The --sym, --free-sym, --reset-sym and --preset specs, resolved in the
 * image that runs: the program at the start, then each program a traced
 * process executes (a #!/usr/bin/env bash shim that execs the real
 * program, a wrapper script, a server that re-executes itself).  A spec
 * that names nothing in one image waits for a later one; it is an error
 * only if no image had it, said at the end with the images searched.
 */
#ifndef HT_SPECS_H
#define HT_SPECS_H

#include <stdbool.h>

#include "heaptrace.h"
#include "probe/allocator.h"
#include "probe/cpython.h"
#include "probe/plan.h"

struct trace_opts;

struct spec_images {
	const struct trace_opts *o;
	bool found[HT_MAX_SPECS];
	char *first_why[HT_MAX_SPECS];  /* why the first image did not have it (probes_find_symbol) */
	char images[600];               /* the images searched, "a, b, c" (then "and N more") */
	int n_images, listed;
	struct cpy_tables py;           /* --preset python: CPython's tables, per object (probe/cpython.c) */
};

void specs_init(struct spec_images *si, const struct trace_opts *o);

/*
 * Every spec in one image (its objects, and its name for messages): those
 * it has are probed (again: a function probed already is not doubled).
 * 0, or -1 on an error (printed: a bad address, a global not found).
 */
int specs_plan(struct spec_images *si, struct probe_plan *plan, const struct objlist *objs, const char *image);

/* The specs no image had so far, with -v (or as the only line when final): how many. */
int specs_missing(const struct spec_images *si, bool final);

void specs_free(struct spec_images *si);

#endif
