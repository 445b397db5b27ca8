/*
 * Shared by the files of tracer/ only: what the helpers of tracer.c do
 * for the load and for each other, declared by file.  It includes no
 * header of tracer.c's: struct tracer is in tracer/state.h.
 */
#ifndef HT_TRACER_INTERNAL_H
#define HT_TRACER_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracer/state.h"

/* Before the load: the live map and its first level, put in by a thread meanwhile (see levels.c). */
void tracer_prepare_levels(struct tracer *tr, uint32_t max_live, bool prealloc);
/* The live map it made, for the load to reuse; -1: none (the load makes it). */
int tracer_prepared_live(const struct tracer *tr);
/* After the load: the first live level and the thread that makes the next ones.  0 or -1 (printed). */
int tracer_start_levels(struct tracer *tr, uint32_t max_live);
void tracer_stop_levels(struct tracer *tr);
/* Blocks level k can hold. */
uint32_t tracer_level_cap(const struct live_levels *lv, int k);
/* memlock.c: the kernel's fdinfo memlock of a map, 0 if unknown. */
uint64_t tracer_memlock_of(int fd);

/* --mmap: the mapping syscalls' tracepoints, attached to map_enter and map_exit.  0 or -1 (printed). */
/* levels.c: levels enough that more blocks than live now fit (the ring's drain, before a run). */
void tracer_live_room(struct tracer *tr, uint64_t more);
int tracer_attach_maps(struct tracer *tr);
void tracer_detach_maps(struct tracer *tr);

/*
 * share.c: obj gets the main object's maps (by fd) and must have its
 * globals where the main object has them; a map the main object lacks
 * stays obj's own.  Before obj's load.  0 or -errno (said when the
 * globals differ).
 */
struct bpf_object;
int tracer_share_maps(struct tracer *tr, struct bpf_object *obj);
/* Whether m (of an object loaded with tracer_share_maps) is the main object's map, not the object's own. */
struct bpf_map;
bool tracer_shares_map(const struct tracer *tr, const struct bpf_map *m);
/* The program named want (and also) into obj, with the main object's maps. */
struct bpf_object_skeleton;
int tracer_load_into(struct tracer *tr, struct bpf_object *obj, struct bpf_object_skeleton *s, const char *want,
		     const char *const *also, struct tracer_times *times);
/* The attach types of obj's uprobe programs, for uprobe_multi links (libbpf 1.1 cannot say them). */
void tracer_set_attach_types(struct bpf_object *obj, bool multi);

/* phases.c: libbpf's messages to tracer_timed_load (and stderr at -v); obj loaded, its phases added to *times. */
void tracer_phases_hook(void);
int tracer_timed_load(struct tracer_times *times, struct bpf_object_skeleton *s);

/* programs.c: a program of the main object's by its tracer_prog. */
struct heaptrace;
struct bpf_program *tracer_main_prog(const struct heaptrace *skel, enum tracer_prog prog);
/* The uprobe programs' bits (1 << PROG_*), from PROG_ALLOC_ENTER to PROG_RESET_ENTER. */
#define TRACER_UPROBE_PROGS (1u << PROG_ALLOC_ENTER | 1u << PROG_ALLOC_RETURN | 1u << PROG_FREE_ENTER | \
			     1u << PROG_RESET_ENTER)
/* The uprobe programs of want that no instance has, together.  0, or -errno (said). */
int tracer_load_uprobes(struct tracer *tr, unsigned want);
/* A program, loaded if not yet; NULL if it cannot be (said). */
struct bpf_program *tracer_program(struct tracer *tr, enum tracer_prog prog);

/* uprobe_obj.c: an instance of the uprobe programs' object (heaptrace.bpf.c, its checked-once functions inlined). */
struct bpf_object_open_opts;
struct heaptrace *tracer_open_uprobes(const struct bpf_object_open_opts *opts);

/* apart.c: may progs' stub programs be verified side by side (both asked for, two CPUs)? */
bool tracer_apart_worth(unsigned progs);
/* May this process run on two CPUs? */
bool tracer_two_cpus(void);
/* Load both so, into tr->more, after the main object (tr->skel).  0, or -errno with neither loaded (not said). */
int tracer_load_apart(struct tracer *tr);
/* Programs (names, NULL-ended) for an instance of their own: of the uprobe programs' object if inlined. */
#define TRACER_MAX_PARTS 2
struct tracer_part {
	const char *names[5];
	bool inlined;
};
/* Each part into its instance, side by side (tracer_two_cpus()), into tr->more.  0, or -errno with none loaded (not said). */
int tracer_load_parts(struct tracer *tr, const struct tracer_part *parts, int n);

/* -v: each program's verification time and instructions (the kernel's stats log), armed before a load, said after. */
void tracer_vlog_arm(struct bpf_object *obj);
void tracer_vlog_report(struct bpf_object *obj);
/* libbpf's warnings: a refused program's log is kept for tracer_refusal(). */
void tracer_vlog_libbpf(const char *fmt, va_list ap);
/* The last refusal, "the verifier of Linux R refused PROG: ITS LAST LINES", into buf; false if none. */
bool tracer_refusal(char *buf, size_t size);

#endif
