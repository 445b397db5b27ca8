/*
 * The `trace` command's options (cli/trace.c declares and parses them), a
 * header of their own: every file of session/ reads them, and none of
 * them need session.c for it.
 */
#ifndef HT_SESSION_OPTS_H
#define HT_SESSION_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "heaptrace.h"
#include "output/output.h"
#include "probe/symspec.h"
#include "profile/suppress.h"
#include "session/limits.h"

enum unwind_mode { UNWIND_AUTO, UNWIND_FP, UNWIND_DWARF };

struct trace_opts {
	uint32_t pid;                           /* the target: -p's first, or the cgroup's first process */
	uint32_t pids[HT_MAX_PROCS];            /* -p, every one given (session/procset.c traces the others) */
	int n_pids;
	const char *cgroup;                     /* --cgroup DIR: every process in it */
	char **argv;                            /* command to launch */
	const char *output;
	enum ht_format format;
	enum ht_value value;
	double duration;
	uint32_t max_live, max_stacks;
	uint32_t top;
	int probe_at_entry;                     /* --probe-at: 0 auto, 1 entry */
	bool list_probes;
	bool quiet;             /* -q: no "tracing PID N" line for -p */
	uint32_t max_depth;
	int stack_mode;                         /* enum ht_stack_mode: walk or kernel */
	int unwind;                             /* enum unwind_mode */
	struct sym_spec syms[HT_MAX_SPECS];     /* --sym, --free-sym, --reset-sym in order */
	const char *sym_option[HT_MAX_SPECS];
	int n_syms;
	bool no_libc;
	const char *lib;                        /* --lib: the malloc object, overriding discovery */
	const char *debug_dir;                  /* --debug-dir: separate debug info, before /usr/lib/debug */
	double interval;                        /* -i: snapshot period */
	bool diff;                              /* --diff: growth summary per snapshot */
	uint64_t interval_bytes;                /* --interval-bytes: a snapshot per this many bytes allocated */
	uint64_t snapshot_at_rss;               /* --snapshot-at-rss: one snapshot when RSS first crosses it */
	bool mmap;                              /* --mmap: anonymous mappings and brk as blocks too */
	bool at_peak;
	uint64_t peak_step;
	double min_age;
	const char *http[4];                    /* --http ADDR:PORT or unix:PATH, repeatable (HT_MAX_HTTP) */
	int n_http;
	char *http_token;                       /* --http-token FILE: the token read from it */
	char *http_cert, *http_key;             /* --http-cert, --http-key FILE: PEM read from them */
	bool follow_fork;
	bool several;                           /* more than one process: --follow-fork, several -p, --cgroup */
	bool merge;                             /* --merge: one profile of the followed tree */
	uint64_t sample_rate;                   /* --sample-rate bytes, 0: exact */
	bool no_inject;                         /* --no-inject: uprobes only, nothing written into the target */
	const char *user;                       /* -u: the launched command runs as this user */
	struct limits limits;                   /* --limit-peak, --limit-leak */
	struct suppressions *suppress;          /* --suppressions FILE..., and the built-in list */
	bool no_default_suppressions;
};

#endif
