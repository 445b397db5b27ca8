/* Which functions to probe, where, and with which allocator descriptor. */
#ifndef HT_PROBES_H
#define HT_PROBES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "probe/allocator.h"
#include "heaptrace.h"
#include "probe/placement.h"
#include "probe/symspec.h"

struct tracer;

struct probe {
	char *func;
	const char *path;       /* the object, owned by the plan */
	uint64_t offset;        /* file offset of the probed instruction */
	uint64_t delta;         /* its distance from the function's entry */
	uint32_t spec;          /* attach cookie: index into plan.specs */
	enum ht_spec_kind kind;
	struct placement where;
	/*
	 * The in-process fast path (user/inject/): a function whose first
	 * stub_len bytes can be displaced and whose spec the stub can evaluate
	 * is redirected to the stub instead of carrying uprobes (stub set),
	 * else stub_why says why not.  family: of the malloc family.
	 */
	bool family;
	uint64_t func_vaddr, func_size;
	uint32_t stub_len;
	uint8_t stub_skip;      /* the jump goes this far in, after an instruction the pre-stub undoes (relocate_skip) */
	uint8_t stub_undo_len;
	uint8_t stub_undo[4];
	char stub_why[120];
	bool stub;              /* taken by the stub: no uprobe is attached to it */
	/*
	 * Known of the function (probe/cpython.c): what stub_fn's small_max,
	 * STUB_FN_GIL and STUB_FN_FORWARD say.  A wrapper that calls through its table
	 * slot (ELF address fwd_slot) forwards while the slot holds
	 * heaptrace's jump to the function behind it, or that function itself
	 * (fwd_func; 0 when the wrapper inlines a copy of it then).  Its call
	 * is fwd_impl(*fwd_ctx, its own arguments): the function the slot
	 * holds by default, the table's context first (PyMemAllocatorEx's
	 * ctx, fwd_member words before the slot: 1 malloc, 2 calloc, 3
	 * realloc, 4 free).
	 */
	uint32_t small_max;
	bool gil;
	bool forwards;
	uint8_t fwd_member;
	uint64_t fwd_slot, fwd_func, fwd_impl, fwd_ctx;
	bool given_back;        /* the stub gave it up while installing: its uprobes come late (probes_attach_fallback) */
	bool attached;          /* its uprobes are attached */
};

struct probe_plan {
	struct probe probes[HT_MAX_SPECS];
	int n;
	struct ht_alloc_spec specs[HT_MAX_SPECS];
	char *paths[HT_MAX_SPECS];
	int n_paths;
	bool at_entry;          /* --probe-at=entry */
	bool said;              /* -v has listed the probes (once: followed children repeat the plan) */
};

void probes_init(struct probe_plan *plan, bool at_entry);

/*
 * The malloc family of one object (functions it lacks are skipped).  With
 * require, an object without malloc and free is an error (printed).
 */
int probes_add_malloc(struct probe_plan *plan, const char *path, bool require);

/*
 * A --sym/--free-sym/--reset-sym function, found among the target's objects
 * by name (their symbols, then their separate debug info under debug_dir,
 * may be NULL, and /usr/lib/debug) or by address (NAME "0x..."; in @OBJECT,
 * else the executable).  0 or -1 (printed).
 */
int probes_add_symbol(struct probe_plan *plan, const struct sym_spec *s, const char *option,
		      const struct objlist *objs, const char *debug_dir);

/*
 * probes_add_symbol for one image of several (a program, then what it
 * executes): 1 probed, 0 not in these objects (nothing printed; the
 * message probes_add_symbol would print is in why), -1 an error (printed).
 */
int probes_find_symbol(struct probe_plan *plan, const struct sym_spec *s, const char *option,
		       const struct objlist *objs, const char *debug_dir, char *why, size_t why_len);

/*
 * A function found otherwise (CPython's allocator tables: probe/cpython.c),
 * by its ELF address and size (0: unknown, probed at its entry), probed
 * as a --sym or --free-sym with spec.  0 or -1 (printed).
 */
int probes_add_func(struct probe_plan *plan, const char *path, const char *func, uint64_t vaddr, uint64_t size,
		    const struct ht_alloc_spec *spec, const char *option);

/*
 * Attach every probe of the plan for one process.  Returns 0, -1 (printed),
 * 1 when the tracer was loaded for uprobe_multi and the kernel has none, or
 * 2 when it was loaded for uprobe sessions and the kernel has none: reload
 * it without and call again.
 */
int probes_attach(struct probe_plan *plan, struct tracer *tr, pid_t pid);

/*
 * The fast path gave up functions it had been given (p->stub cleared):
 * their uprobes, for one process.  0 or -1 (printed).
 */
int probes_attach_fallback(struct probe_plan *plan, struct tracer *tr, pid_t pid);

/*
 * The functions the fast path holds (p->stub), as uprobes for one process
 * without a stub of its own (a followed child after its exec, or whose
 * stub could not be enabled).  0 or -1 (printed).
 */
int probes_attach_stubbed(const struct probe_plan *plan, struct tracer *tr, pid_t pid);

/*
 * Probes plan->probes[from ..] added after the tracer was loaded (a new
 * program's allocator), attached for one process; their descriptors must
 * be in the tracer already (tracer_set_specs).  0 or -1 (printed).
 */
int probes_attach_new(const struct probe_plan *plan, int from, struct tracer *tr, pid_t pid);

/* Does the plan probe functions of this object? */
bool probes_have_object(const struct probe_plan *plan, const char *path);

/* The plan as lines "FUNC PATH 0xOFFSET +DELTA KIND `INSN` WHY", for scripts (--list-probes). */
void probes_print(const struct probe_plan *plan, FILE *f);

void probes_free(struct probe_plan *plan);

#endif
