/* The profile as read from the BPF maps: stacks x four counters, plus losses. */
#ifndef HT_PROFILE_H
#define HT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "heaptrace.h"
#include "util/rss.h"

struct tracer;
struct timeline;
struct tl_series;
struct growth;

/* A stack's blocks live at the end that were allocated in one time bin (profile.live_bin_ns wide). */
struct prof_live {
	uint32_t bin;
	uint32_t objects;
	uint64_t bytes;
};

enum ht_value { V_INUSE_SPACE, V_INUSE_OBJECTS, V_ALLOC_SPACE, V_ALLOC_OBJECTS, V_REALLOC_OBJECTS, V_REALLOC_SPACE };

/* The raw counts of the allocations recorded by --sample-rate, as a heap_v2 profile holds them. */
struct prof_sampled {
	int64_t inuse_objects, inuse_bytes;
	uint64_t alloc_objects, alloc_bytes;
};

struct prof_stack {
	uint64_t hash;          /* the BPF side's stack key (0 once merged or diffed) */
	uint64_t *pcs;          /* return addresses, innermost (the allocation site) first */
	uint32_t depth;         /* 0 for the pseudo stack of allocations whose stack was lost */
	uint32_t flags;         /* HT_STACK_TRUNCATED, HT_STACK_MAX_DEPTH */
	/*
	 * The counters every output reports: exact counts, or with
	 * --sample-rate the estimates (the BPF side's est_*, in whole
	 * objects); peak_objects/peak_bytes hold the at-peak in-use, resolved.
	 * The est_* fields are not used past profile_take.
	 */
	struct ht_site c;
	struct prof_sampled sampled;    /* profile.sample_rate: the raw counts behind c */
	/* profile_source.live_bins: its live blocks by allocation time, bins in order (may repeat once merged). */
	struct prof_live *live;
	uint32_t n_live;
	pid_t pid;              /* --merge: the process the stack is from (stacks differ by it); 0: none */
	bool suppressed;        /* --suppressions: its live blocks are not leaks (profile.suppressed) */
};

struct prof_program {
	pid_t pid;
	char *name;
};

struct profile {
	struct prof_stack *stacks;
	size_t n;
	struct ht_site total;
	uint64_t counters[HT_COUNTER_MAX];     /* this process's events and losses (its slot's) */
	pid_t pid;
	const char *maps;       /* the target's /proc/PID/maps text (borrowed, unless own_maps) */
	char *own_maps;         /* --merge: maps is this, the tree's (tree.c), freed with the profile */
	size_t trimmed;         /* stacks cut where a frame left executable memory */
	struct ht_totals totals;        /* process totals and the peak, as the BPF side kept them */
	uint64_t now_ns;                /* CLOCK_MONOTONIC when read (bpf_ktime_get_ns's clock) */
	uint64_t start_ns;              /* when tracing started */
	double min_age;                 /* >0: in-use counts only blocks live at least this long (s) */
	bool is_diff;                   /* counters are changes between two profiles */
	const char *command;            /* the target's command line, for the record */
	const char *name;               /* the program, as its user knows it (the path it was executed by); may be NULL */
	bool snapshot;                  /* one of a series (-i), to be compared with the others */
	/*
	 * --sample-rate: the counters are estimates from allocations sampled
	 * one per sample_rate bytes, whose raw counts are in stacks[].sampled.
	 * 0: exact counts, or estimates that have no raw counts behind them
	 * (diffs, at-peak profiles, profiles read back).
	 */
	uint64_t sample_rate;
	/* -f html: the process's heap over time (owned, one allocation; NULL: not sampled) and live blocks by age. */
	struct tl_series *timeline;
	uint32_t live_bins;             /* bins of [start_ns, now_ns) in stacks[].live, 0: not read */
	uint64_t live_bin_ns;
	bool ended;                     /* the process exited while traced: what is live is leaked */
	/* The stacks of unmatched frees (c.unmatched_frees; no allocations), for -f top: owned. */
	struct prof_stack *unmatched;
	size_t n_unmatched;
	/* --merge: each other process's program by pid (owned), for -f proto's "program" label; the target's is name. */
	struct prof_program *programs;
	size_t n_programs;
	struct ht_rss rss;              /* the process's RSS when taken (--merge: the tree's, summed) */
	/* --suppressions: the in-use of the stacks marked suppressed, out of the leak views (suppress.c). */
	struct {
		uint64_t bytes, objects, stacks;
	} suppressed;
	/* -i: its stacks' growth over the last snapshots (profile/growth.h), for -f top; NULL: none. */
	const struct growth *growth;
};

/* A traced process of the tree (--merge). */
struct tree_proc {
	uint32_t slot;          /* its process slot */
	pid_t pid;
	char *maps;             /* its /proc/PID/maps text, now or as last read */
	char *name;             /* its program (may be NULL) */
};

void tree_procs_free(struct tree_proc *procs, size_t n);

/* Where profiles of a session come from, and what every one of them records. */
struct profile_source {
	const struct tracer *tr;
	double min_age;         /* --min-age SEC */
	uint64_t start_ns;      /* when tracing started */
	const char *command;    /* the traced command line */
	/*
	 * Losses counted outside the BPF maps (the in-process stub's), added to
	 * theirs: one process slot's, or every slot's (HT_ALL_PROCS); may be NULL.
	 */
	void (*more_counters)(void *arg, uint32_t proc, uint64_t counters[HT_COUNTER_MAX]);
#define HT_ALL_PROCS UINT32_MAX
	void *more_arg;
	struct timeline *timeline;              /* -f html: the heap over time, NULL: none */
	/*
	 * --merge: the traced processes besides the target, as a copy the
	 * caller frees (tree_procs_free); NULL: profiles are the target's.
	 * Called from --http's thread too.
	 */
	int (*tree)(void *arg, struct tree_proc **procs, size_t *n);
	void *tree_arg;
	uint32_t live_bins;                     /* -f html: live blocks read by allocation time, 0: not */
};

/*
 * The profile of one traced process as the BPF maps hold it now: process
 * slot 0 is the target, others are children followed with --follow-fork.
 * Stacks with identical frames are merged; maps (borrowed) names the
 * process's objects.  The one way every profile is taken: the final one,
 * followed children's, -i snapshots and --http's.
 */
int profile_take(const struct profile_source *src, uint32_t slot, pid_t pid, const char *maps, struct profile *p);
/* The code objects of every Python frame the stacks hold, read from pid now (it is about to exit). */
int profile_note_python(const struct tracer *tr, pid_t pid);
/*
 * The profile that snapshots, --http and the final write take: the
 * target's (profile_take of slot 0), or with src->tree the whole tree's
 * (tree.c): every process's stacks, each labelled with its pid, its pcs
 * moved into an address space of the tree's memory map (own_maps) where
 * its mappings differ from the others'; counters and totals summed.
 */
int profile_take_main(const struct profile_source *src, pid_t pid, const char *maps, struct profile *p);
/*
 * The totals /metrics reports: the target's, or with src->tree the sum
 * over the same processes a merged profile holds (peak_bytes: the sum of
 * each process's own peak).
 */
void profile_main_totals(const struct profile_source *src, struct ht_totals *tot);

/* --merge: each process's own totals, the target (slot 0, pid) first; names owned. */
struct proc_totals {
	pid_t pid;
	char *name;             /* NULL for the target (its name is the caller's), or unknown */
	struct ht_totals t;
};
/* 0, or -1 (out of memory); without a tree, the target alone. */
int profile_proc_totals(const struct profile_source *src, pid_t pid, struct proc_totals **out, size_t *n);
void proc_totals_free(struct proc_totals *v, size_t n);
/* The RSS of the same processes: pid's (the target), or with src->tree the tree's, summed. */
void profile_main_rss(const struct profile_source *src, pid_t pid, struct ht_rss *r);
/* The event and loss counters of the same processes (what the profile's counters hold). */
void profile_main_counters(const struct profile_source *src, uint64_t counters[HT_COUNTER_MAX]);
/* A copy of p without pid labels, stacks of the same frames merged (what formats without labels show). */
int profile_unlabel(const struct profile *p, struct profile *out);

/*
 * The whole session's event and loss counters: every traced process's,
 * where a profile carries its own process's (the -v events line, /metrics).
 */
void profile_session_counters(const struct profile_source *src, uint64_t counters[HT_COUNTER_MAX]);
/* Sort stacks by frames, merge identical ones, recount the totals. */
void profile_normalize(struct profile *p);

/*
 * Read a heap profile file: legacy text (heaptrace's or gperftools') or
 * heaptrace's gzipped protobuf: counters,
 * frames and the MAPPED_LIBRARIES text (*maps, malloc'd, for p->maps).
 * Returns 0, or -1 with the error printed.
 */
int profile_read_text(const char *path, struct profile *p, char **maps);

/*
 * Profiles read back are bounded: at most PROFILE_MAX_BYTES of text or of
 * inflated protobuf, PROFILE_MAX_LINE bytes a line, PROFILE_MAX_RECORDS
 * stacks.
 */
#define PROFILE_MAX_BYTES (1ull << 30)
#define PROFILE_MAX_LINE (1u << 20)
/* Records (stacks) per profile: heaptrace keeps 65,536 stacks by default; each costs ~250 bytes read back. */
#define PROFILE_MAX_RECORDS (1u << 20)

/*
 * A profile read back must hold counts a heap can have: none negative, and
 * every counter's sum over all stacks within 64 bits (so merging and
 * diffing cannot wrap).  -1 with the error printed.
 */
int profile_check_range(const struct profile *p, const char *path);

/* The same from a gzipped pprof protobuf in memory (heaptrace's -f proto). */
int profile_read_proto(const uint8_t *gz, size_t len, const char *path, struct profile *p, char **maps);

/* The profile as it stood at the peak: in-use counters replaced by the at-peak ones. */
void profile_at_peak(struct profile *p);

/*
 * Two runs' profiles compared (rebase.c): p's pcs, of the memory map from,
 * moved into the map to, object by object (the same file at another
 * address); p sorted again.  *left: frames of objects to has not (a file
 * rebuilt in between), kept as they were.  0, or -1 out of memory.
 */
int profile_rebase(struct profile *p, const char *from, const char *to, uint64_t *left);

/* new - old per stack (stacks matched by their frames); in p->stacks of a new profile. */
int profile_diff(const struct profile *old, const struct profile *new, struct profile *diff);

void profile_free(struct profile *p);

int64_t site_value(const struct ht_site *c, enum ht_value v);
void site_add(struct ht_site *to, const struct ht_site *c);

/* qsort order of stacks by their frames. */
int cmp_frames(const void *a, const void *b);
/* Its name (--value), NULL for no value. */
const char *value_name(enum ht_value v);
int value_parse(const char *s, enum ht_value *v);

/* Indices of stacks ordered by value v, largest first. */
size_t *profile_order(const struct profile *p, enum ht_value v);

#endif
