/*
 * The loaded BPF object's state, a header of its own: every file of
 * tracer/ works on struct tracer, passed in, and includes this rather
 * than tracer.h (tracer.c's functions, and its helpers' headers for the
 * folders before tracer/).
 */
#ifndef HT_TRACER_STATE_H
#define HT_TRACER_STATE_H

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
	bool session;           /* allocators may be uprobe sessions (needs multi; the program loads from Linux 6.13) */
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
	/*
	 * Preallocated levels (a ring's drain reads them: bpf/live.bpf.h says
	 * why), a small first one; else, where uprobes fill them, levels that
	 * take memory as they fill and a first one of 64K: a preallocated
	 * level takes longer to make than uprobes' allocations leave.
	 */
	bool prealloc;
};

struct tracer {
	struct heaptrace *skel;
	struct heaptrace *more[6];      /* programs loaded apart or later, with skel's maps (programs.c: tracer_program()) */
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
	/* The last load, for -v: in all, then libbpf's phases (see libbpf_log in phases.c). */
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
	uint64_t volume_stop;           /* tracer_volume_stop()'s bytes (atomic; 0: none) */
	char ktypes[64];                /* the cut-down kernel BTF for CO-RE (tracer/ktypes.h); "": the whole one */
	int ktypes_fd;                  /* the file ktypes names (/proc/self/fd/N) */
};

#endif
