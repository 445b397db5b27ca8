/* The loaded BPF object: its configuration, uprobe links and counters. */
#ifndef HT_TRACER_H
#define HT_TRACER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"

enum tracer_prog { PROG_ALLOC_ENTER, PROG_ALLOC_RETURN, PROG_FREE_ENTER, PROG_RESET_ENTER,
		  PROG_ALLOC_SESSION /* entry and return in one uprobe session */,
		  PROG_STUB_ALLOC, PROG_STUB_FREE /* the in-process stub's record sites */ };

struct tracer_config {
	pid_t tgid;
	uint32_t max_live;      /* live blocks tracked */
	uint32_t max_stacks;    /* distinct stacks */
	uint32_t max_depth;     /* frames per stack */
	enum ht_stack_mode stack_mode;
	uint64_t peak_step;     /* --peak-step bytes; 0: max(5%, 1 MiB) */
	const struct ht_alloc_spec *specs;
	int n_specs;
	bool multi;             /* attach with uprobe_multi links (kernel 6.6+) */
	bool session;           /* allocators as uprobe sessions (kernel 6.13+); needs multi */
	uint64_t sample_rate;   /* --sample-rate bytes, 0: every allocation */
	bool follow_fork;       /* children added with tracer_add_proc are traced too */
	uint32_t unwind_rows;   /* HT_STACK_DWARF: CFI rows the array holds */
	bool stub;              /* the in-process stub reports recorded calls (user/inject/) */
};

struct tracer {
	struct heaptrace *skel;
	struct bpf_link **links;
	int n_links;
	struct bpf_link *exec_link;     /* execve: the old program's blocks are gone */
	struct bpf_link *signal_link;   /* signal delivery: the restorer, where stacks cross signal frames */
	int *multi_fds;                 /* uprobe_multi link fds */
	int n_multi;
	bool multi;
	bool session;                   /* loaded for uprobe sessions: attach PROG_ALLOC_SESSION */
	int n_session;                  /* session links made */
	uint64_t sample_rate;
	uint32_t n_slots;               /* process slots in use: 0 .. n_slots-1 (tracer_add_proc adds) */
};

/*
 * Open, size and load the BPF object.  Returns 0 or -1 with the error
 * printed.  A kernel that cannot load the session program gets the plain
 * ones instead (tr->session says which).
 */
int tracer_load(struct tracer *tr, const struct tracer_config *cfg);

/* Attach a program at a file offset of an object, for one process, with a cookie. */
int tracer_attach(struct tracer *tr, enum tracer_prog prog, const char *path, uint64_t offset,
		  uint32_t cookie, pid_t pid);

/*
 * Attach one program at many offsets of an object with one uprobe_multi
 * link: one registration, and one RCU grace period at detach instead of one
 * per probe (seconds for a dozen probes).  Needs tracer_config.multi.
 * PROG_ALLOC_SESSION makes a uprobe session link.  Returns 0 or -errno;
 * -EOPNOTSUPP when the kernel has no uprobe_multi, -EPROTONOSUPPORT when it
 * has no uprobe sessions.
 */
int tracer_attach_multi(struct tracer *tr, enum tracer_prog prog, const char *path,
			const uint64_t *offsets, const uint64_t *cookies, uint32_t n, pid_t pid);

/* Stop tracing: remove every uprobe, keep the maps readable. */
void tracer_detach(struct tracer *tr);
void tracer_close(struct tracer *tr);

/* The event and loss counters of the process in a slot (0: the target), summed over CPUs. */
void tracer_counters(const struct tracer *tr, uint32_t slot, uint64_t out[HT_COUNTER_MAX]);
/* The same summed over every process slot: the whole session's. */
void tracer_session_counters(const struct tracer *tr, uint64_t out[HT_COUNTER_MAX]);

/* Kernel memory charged to the maps (fdinfo memlock), in bytes; per map for the live map. */
uint64_t tracer_map_memory(const struct tracer *tr, uint64_t *live_bytes, uint32_t *live_entries);

/* --unwind dwarf: the CFI row array (mmappable), the objects map, and flushing the per-process caches. */
uint32_t tracer_unwind_capacity(const struct tracer *tr);
int tracer_unwind_rows_fd(const struct tracer *tr);
int tracer_unwind_objects_fd(const struct tracer *tr);
/* Empty the per-process code caches of slots from_slot and up. */
void tracer_unwind_flush(const struct tracer *tr, uint32_t from_slot);
void tracer_unwind_set(const struct tracer *tr, uint32_t slot, const struct ht_unwind_proc *p);

/* Map file descriptors, for reading the profile. */
int tracer_sites_fd(const struct tracer *tr);
int tracer_stacks_fd(const struct tracer *tr);
int tracer_live_fd(const struct tracer *tr);
int tracer_arenas_fd(const struct tracer *tr);

/* The totals and peak the BPF side keeps for a process slot (0: the target). */
void tracer_totals(const struct tracer *tr, uint32_t proc, struct ht_totals *t);

/* --follow-fork: trace a child in a slot (1 .. HT_MAX_PROCS-1) whose parent is in another. */
int tracer_add_proc(struct tracer *tr, pid_t pid, uint32_t slot, uint32_t parent);
uint32_t tracer_max_stacks(const struct tracer *tr);

/* Descriptors specs[from .. from+n) into the loaded object, before any link carries their cookies.  0 or -1. */
int tracer_set_specs(struct tracer *tr, const struct ht_alloc_spec *specs, int from, int n);

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
