/*
 * Following a traced process into the program it executes, as strace,
 * perf and heaptrack do: the profile describes the program that runs.  At
 * the exec (the process stopped, nothing of the new program run) the old
 * program's stacks are forgotten, the new one's objects get CFI tables and,
 * when its allocator is an object not probed yet, probes; so do the
 * --sym specs and presets it has.
 */
#ifndef HT_EXEC_H
#define HT_EXEC_H

#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"
#include "unwind/procs.h"

struct probe_plan;
struct tracer;
struct trace_opts;
struct spec_images;

struct exec_follow {
	const struct trace_opts *o;
	struct probe_plan *plan;
	struct tracer *tr;
	struct unwind *uw;              /* NULL: no CFI tables (frame pointers, kernel stacks) */
	struct spec_images *specs;      /* the specs, resolved in each new program (session/specs.h) */
	/* Per process slot: plan->probes[0 .. upto) are attached for its process. */
	uint8_t upto[HT_MAX_PROCS];
	/*
	 * Set (the fast path on): the target's (slot 0) new probes,
	 * plan->probes[from ..], are offered to its stub first; those it takes
	 * (p->stub) get no uprobe now, and are given back if its install fails.
	 */
	void (*to_stub)(void *arg, int from);
	void *to_stub_arg;
};

/*
 * pid, in process slot, executed a new program and is stopped at the exec;
 * maps: its memory map now (the executable and the loader), root: "" or
 * "/proc/PID/root", the prefix that reaches its files.  0, or -1 when the
 * new program cannot be planned (printed; it runs on, traced as far as the
 * probes it has reach).
 */
int exec_follow(struct exec_follow *x, pid_t pid, uint32_t slot, const char *maps, const char *root);

/* "NAME", or "NAME -> FILE" when the file it runs is named otherwise (a link, a script's interpreter). */
void exec_describe(char *buf, size_t len, const char *name, const char *file);

#endif
