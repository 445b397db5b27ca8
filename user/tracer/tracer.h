/* The loaded BPF object: its configuration, uprobe links and counters. */
#ifndef HT_TRACER_H
#define HT_TRACER_H

#include <pthread.h>
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
	bool batch;             /* exact mode's events may come through rings: the drain's object is loaded beside (drain.c) */
	bool arenas;            /* a spec has an arena (--sym arena=, --reset-sym): the arena maps get room */
	unsigned progs;         /* 1 << PROG_*: the programs attached now; others are loaded when first attached */
	bool maps;              /* --mmap: the mapping syscalls' tracepoints (maps.c) */
};

/*
 * The live map's levels (bpf/live.bpf.h): made here as the blocks grow,
 * by a thread that the BPF side wakes when they reach the next level's
 * threshold, so that a busy main thread (a snapshot being written) does
 * not make the target run out of room.
 */
struct live_levels {
	int fds[HT_LIVE_LEVELS];
	uint32_t cap[HT_LIVE_LEVELS];
	uint64_t base[HT_LIVE_LEVELS];  /* fdinfo memlock when empty: the buckets and the map */
	int n;                          /* levels made; read by other threads (atomic) */
	uint64_t max;                   /* --max-allocs */
	bool failed;                    /* a level could not be made: said once */
	struct ring_buffer *rb;
	int stop_fd;                    /* eventfd: the thread ends */
	pthread_t thread;
	bool running;
	int outer_fd;                   /* the live map (made before the load: tracer_prepare_levels), 0: none */
	int first_fd;                   /* level 0 until it is in, 0: none */
	pthread_t putter;               /* puts level 0 in while the programs load */
	int put_err;                    /* its result: 0 or an errno */
	bool putting;
};

struct tracer {
	struct heaptrace *skel;
	struct heaptrace *more[6];      /* programs loaded apart or later, with skel's maps (tracer.c: program()) */
	int n_more;
	struct alloc_session *sess;     /* the uprobe session program (bpf/alloc_session.bpf.c), with skel's maps */
	struct bpf_link **links;
	int n_links;
	size_t links_cap;
	struct bpf_link *exec_link;     /* execve: the old program's blocks are gone */
	struct bpf_link *exit_link;     /* a thread's exit: what it held is thread_exit_frees */
	struct bpf_link *oom_link;      /* oom:mark_victim: the OOM killer chose a traced process */
	struct bpf_link *signal_link;   /* signal delivery: the restorer, where stacks cross signal frames */
	struct bpf_link *map_links[5];  /* --mmap: brk's entry, the four mapping calls' exits (maps.c) */
	struct bpf_link *fork_link;     /* without --follow-fork: the target's forks (untraced_children) */
	struct tracer_multi {
		int fd;                 /* a uprobe_multi link (-1: closed by tracer_forget_pid) */
		pid_t pid;              /* the process it is for */
	} *multi_links;
	int n_multi;
	size_t multi_cap;
	bool multi;
	bool session;                   /* loaded for uprobe sessions: attach PROG_ALLOC_SESSION */
	int n_session;                  /* session links made */
	uint64_t sample_rate;
	uint32_t n_slots;               /* process slots in use: 0 .. n_slots-1 (tracer_add_proc adds) */
	struct live_levels lv;
	/* The last load, for -v: in all, then libbpf's phases (see libbpf_log in tracer.c). */
	struct tracer_times {
		double load_ms;         /* tracer_load, the first live level and the exec watch included */
		double ktypes_ms;       /* the kernel types for CO-RE (ktypes.c): from the cache, or built */
		double btf_ms;          /* feature probes, the kernel's BTF */
		double maps_ms;         /* the object's BTF, the maps */
		double core_ms;         /* CO-RE relocations against the kernel's BTF */
		double verify_ms;       /* the programs: the verifier */
	} times;
	uint64_t *base_memlock;         /* per map of the object, in its order: fdinfo memlock right after load */
	struct drain_state *drain;      /* the event rings' consumer (drain.c), NULL: no ring yet */
	char ktypes[64];                /* the cut-down kernel BTF for CO-RE (tracer/ktypes.h); "": the whole one */
	int ktypes_fd;                  /* the file ktypes names (/proc/self/fd/N) */
};

/*
 * Open, size and load the BPF object.  Returns 0 or -1 with the error
 * printed.  A kernel that cannot load the session program gets the plain
 * ones instead (tr->session says which).
 */
int tracer_load(struct tracer *tr, const struct tracer_config *cfg);

/*
 * --mmap: heaptrace itself makes system calls in process pid (the stub's
 * mappings) from now (on) until told otherwise: not its program's mappings.
 */
void tracer_remote(struct tracer *tr, pid_t pid, bool on);

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

/*
 * A followed process ended: close its uprobe_multi links.  Every link on
 * a probe is consulted at each hit, and one whose process is not the
 * caller's asks for the return (uprobe sessions cannot skip it): a dead
 * process's links would cost every other process a return probe per call.
 * Its entries of the process and stub maps go too.
 */
void tracer_forget_pid(struct tracer *tr, pid_t pid);

/*
 * Allocators as uprobe sessions (tracer_config.session): loads the session
 * program if not yet.  false: no sessions (not asked for, or the kernel
 * cannot load the program: said); plain return probes then.
 */
bool tracer_sessions(struct tracer *tr);

/* Stop tracing: remove every uprobe, keep the maps readable. */
void tracer_detach(struct tracer *tr);
/*
 * When nothing traced is left alive: the links' last close (and its grace
 * periods) happens in an orphan after heaptrace has exited (release.c).
 */
void tracer_release_at_exit(void);
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

/*
 * Kernel memory of the maps, in bytes.  The kernel's own figure (fdinfo
 * memlock) counts an element of a map that is not preallocated at its size,
 * not at the slab object it takes: here each is counted at its slab size
 * class, plus the memory cgroup's 8 bytes per object.  max: every map
 * full (the live map at --max-allocs, stacks at --max-stacks).
 */
struct tracer_memory {
	uint64_t now, max;              /* every map */
	uint64_t memlock;               /* the kernel's figure (fdinfo memlock), every map now */
	uint64_t live_now, live_max;    /* the live map's levels */
	uint64_t live_blocks;           /* blocks in them */
	uint32_t live_room;             /* blocks the levels made so far can hold */
	int levels;
	uint32_t block_bytes;           /* one live block's element, as counted */
	bool estimated;                 /* false: the kernel reports no per-element use (before 6.4): memlock */
	uint64_t progs_memlock;         /* the programs loaded (fdinfo memlock) */
	int progs, links;               /* programs loaded; links open (uprobe_multi links count one each) */
};
void tracer_memory(const struct tracer *tr, struct tracer_memory *m);
/* The links open now: perf-event ones, and uprobe_multi links (one each, whatever its probes). */
int tracer_links(const struct tracer *tr);

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
/* The live map's levels made so far: their count, fds into fds[HT_LIVE_LEVELS]. */
int tracer_live_fds(const struct tracer *tr, int fds[HT_LIVE_LEVELS]);
int tracer_arena_blocks_fd(const struct tracer *tr);
int tracer_arenas_fd(const struct tracer *tr);

/* The totals and peak the BPF side keeps for a process slot (0: the target). */
void tracer_totals(const struct tracer *tr, uint32_t proc, struct ht_totals *t);

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
