/* `heaptrace [trace] [OPTIONS] -p PID | COMMAND`: the trace command's options, then a session. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/opt.h"
#include "probe/presets.h"
#include "serve/http.h"
#include "session/session.h"
#include "util/log.h"

#define F(field) .off = offsetof(struct trace_opts, field)
#define STR_(x) #x
#define STR(x) STR_(x)

static int set_verbose(void *opts, const char *arg, const struct opt *o)
{
	(void)opts, (void)arg, (void)o;
	ht_verbose = true;
	return 0;
}

_Static_assert(sizeof(((struct trace_opts *)0)->http) / sizeof(char *) == HT_MAX_HTTP, "--http's array");

static int set_http(void *opts, const char *arg, const struct opt *o)
{
	struct trace_opts *t = opts;
	(void)o;

	if (t->n_http == HT_MAX_HTTP)
		return opt_bad("--http: at most " STR(HT_MAX_HTTP) " listeners, not more");
	if (http_parse_addr(arg))
		return -1;
	t->http[t->n_http++] = arg;
	return 0;
}

/* --limit-peak, --limit-leak: bytes, and that the limit was given (0 is one). */
static int set_limit(void *opts, const char *arg, const struct opt *o)
{
	struct limits *l = &((struct trace_opts *)opts)->limits;
	bool peak = !strcmp(o->name, "limit-peak");

	if (opt_parse_bytes(arg, peak ? &l->peak : &l->leak, 0, UINT64_MAX))
		return -1;
	*(peak ? &l->peak_set : &l->leak_set) = true;
	return 0;
}

/* --suppressions FILE: read at once, so a bad file is a usage error before anything is traced. */
static int add_suppressions(void *opts, const char *arg, const struct opt *o)
{
	(void)o;
	return suppress_read_file(&((struct trace_opts *)opts)->suppress, arg);
}

/* The files are read at once: a bad one is a usage error, before anything is traced. */
static int set_http_file(void *opts, const char *arg, const struct opt *o)
{
	struct trace_opts *t = opts;
	char **field = !strcmp(o->name, "http-token") ? &t->http_token :
		       !strcmp(o->name, "http-cert") ? &t->http_cert : &t->http_key;
	char opt[32];

	snprintf(opt, sizeof(opt), "--%s", o->name);
	if (*field)
		return opt_bad("%s given twice", opt);
	if (field != &t->http_token && !http_tls_supported())
		return opt_bad("%s: this libmicrohttpd was built without TLS", opt);
	return field == &t->http_token ? http_read_token(opt, arg, field) :
					 http_read_pem(opt, arg, field == &t->http_key, field);
}

/* --sym, --free-sym, --reset-sym: kept in order, each parsed into its BPF descriptor. */
/* -p PID[,PID...], repeatable: the first is the target, the others are traced beside it (session/procset.c). */
static int add_pids(void *opts, const char *arg, const struct opt *o)
{
	struct trace_opts *t = opts;
	const char *p = arg;

	(void)o;
	do {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		/* Digits only: strtoul would take " 5", "+5" and "-5". */
		if (*p < '0' || *p > '9' || end == p || v < 1 || v > INT_MAX || (*end && *end != ','))
			return opt_bad("-p needs a process id, not '%s'", arg);
		if (t->n_pids == HT_MAX_PROCS)
			return opt_bad("-p: at most %d processes", HT_MAX_PROCS);
		for (int i = 0; i < t->n_pids; i++)
			if (t->pids[i] == v)
				return opt_bad("-p %lu is given twice", v);
		t->pids[t->n_pids++] = (uint32_t)v;
		p = *end ? end + 1 : end;
	} while (*p || p[-1] == ',');
	t->pid = t->pids[0];
	return 0;
}

static int add_sym(void *opts, const char *arg, const struct opt *o)
{
	struct trace_opts *t = opts;
	enum ht_spec_kind kind = !strcmp(o->name, "sym") ? HT_SPEC_ALLOC :
				 !strcmp(o->name, "free-sym") ? HT_SPEC_FREE : HT_SPEC_RESET;
	/* Room for the spec twice (a message quotes it and a part of it): ht_err shortens it, nothing cuts it. */
	size_t len = 2 * strlen(arg) + 512;
	char *err;

	if (t->n_syms == HT_MAX_SPECS)
		return opt_bad("too many symbol specs (at most %s)", STR(HT_MAX_SPECS));
	if (!(err = malloc(len)))
		return opt_bad("out of memory for --sym '%s'", arg);
	if (symspec_parse(arg, kind, &t->syms[t->n_syms], err, len)) {
		ht_err("--%s %s", o->name, err);
		free(err);
		return -1;
	}
	free(err);
	t->sym_option[t->n_syms++] = o->name;
	return 0;
}

/*
 * --preset NAME: the preset's specs, as if each had been given with --sym
 * or --free-sym (repeatable); --preset list prints them, to read or copy.
 */
static int add_preset(void *opts, const char *arg, const struct opt *o)
{
	struct trace_opts *t = opts;
	const char *text, *option;
	enum ht_spec_kind kind;
	char err[512];
	int rc;

	(void)o;
	if (!strcmp(arg, "list")) {
		presets_print(stdout);
		exit(0);
	}
	for (int i = 0; !(rc = preset_spec(arg, i, &text, &kind, &option)); i++) {
		if (t->n_syms == HT_MAX_SPECS)
			return opt_bad("too many symbol specs (at most %s)", STR(HT_MAX_SPECS));
		if (symspec_parse(text, kind, &t->syms[t->n_syms], err, sizeof(err))) {
			ht_err("--preset %s: %s", arg, err);    /* a bug in the table */
			return -1;
		}
		t->sym_option[t->n_syms++] = option;
	}
	if (rc < 0) {
		ht_err("unknown preset '%s': %s, or list to print them (see heaptrace --help)", arg, preset_names());
		return -1;
	}
	return 0;
}

/* --preset's values: the presets, then list. */
static const char *preset_value(int i)
{
	return preset_name(i) ? preset_name(i) : i > 0 && preset_name(i - 1) ? "list" : NULL;
}

static const char *const probe_at_names[] = { "auto", "entry", NULL };
static const char *const stack_capture_names[] = { [HT_STACK_WALK] = "walk", [HT_STACK_KERNEL] = "kernel", NULL };
static const char *const unwind_names[] = { [UNWIND_AUTO] = "auto", [UNWIND_FP] = "fp", [UNWIND_DWARF] = "dwarf",
					    NULL };

static const struct opt trace_opts[] = {
	OPTION("pid", 'p', "PID", "attach to a running process until Ctrl-C, SIGTERM,\n--duration or its exit; repeatable, or PID,PID,...:\nthe others are traced as followed children",
	  OPT_CALL, .call = add_pids),
	OPTION("user", 'u', "USER", "run COMMAND with USER's uid, gid and groups\n"
			       "(heaptrace keeps its own); under sudo,\n-u \"$SUDO_USER\" is the safe habit",
	  OPT_STRING, F(user)),
	OPTION("output", 'o', "FILE", "where the profile goes (default: standard output)", OPT_STRING, F(output)),
	OPTION("format", 'f', "FMT", "pprof (default, legacy text) | proto (gzipped protobuf,\nsymbols inside) | collapsed | top |\nhtml (a report page) | svg (a flame graph)",
	  OPT_CALL, .call = cli_set_format, .values = cli_format_name, F(format), .bad = "unknown format '%s': pprof, proto, collapsed, top, html or svg"),
	OPTION("collapsed", 0, NULL, "same as -f collapsed", OPT_CALL, .call = cli_set_collapsed, F(format)),
	OPTION("value", 0, "V", "inuse_space (default) | inuse_objects | alloc_space |\nalloc_objects: the counter collapsed and top report",
	  OPT_CALL, .call = cli_set_value, .values = cli_value_name, F(value),
	  .bad = "unknown value '%s': inuse_space, inuse_objects, alloc_space or alloc_objects"),
	OPTION("duration", 'd', "SEC", "stop tracing after SEC seconds", OPT_SECONDS, F(duration),
	  .bad = "-d needs a positive number of seconds, not '%s'"),
	OPTION("interval", 'i', "SEC", "write a snapshot every SEC seconds, and a final one:\n"
				  "PREFIX.0001.heap, ... (PREFIX: -o, default heaptrace.PID;\n"
				  "-f html, svg: -o r.html gives r.0001.html, ...);\n"
				  "with -f top on a terminal, a live view instead",
	  OPT_SECONDS, F(interval), .bad = "-i needs a positive number of seconds, not '%s'"),
	OPTION("diff", 0, NULL, "with -i: print what grew since the previous snapshot", OPT_FLAG, F(diff)),
	OPTION("at-peak", 0, NULL, "also write the profile as it stood at the peak of in-use\n"
			      "bytes (to FILE.peak, PREFIX.peak.heap or heaptrace.PID.peak.heap;\n"
			      "-f html, svg: r.peak.html)",
	  OPT_FLAG, F(at_peak)),
	OPTION("peak-step", 0, "BYTES", "rise that makes a new at-peak profile (default: 5% of\n"
				   "the last, at least 1 MiB); the peak itself is exact",
	  OPT_BYTES, F(peak_step), .min = 1, .max = UINT64_MAX,
	  .bad = "--peak-step needs a positive number of bytes, not '%s'"),
	OPTION("min-age", 0, "SEC", "in-use counts only blocks live for at least SEC seconds", OPT_SECONDS, F(min_age),
	  .bad = "--min-age needs a positive number of seconds, not '%s'"),
	OPTION("interval-bytes", 0, "BYTES", "also write a snapshot (named like -i's) each time BYTES\n"
					"more have been allocated (checked every 10 ms);\n"
					"SIGUSR1 to heaptrace writes one at once, always",
	  OPT_BYTES, F(interval_bytes), .min = 1, .max = UINT64_MAX,
	  .bad = "--interval-bytes needs a positive number of bytes, not '%s'"),
	OPTION("snapshot-at-rss", 0, "BYTES", "write one snapshot when the target's RSS first crosses\n"
					 "BYTES (its memory cgroup's usage, when that has a limit):\n"
					 "a profile from before an OOM kill",
	  OPT_BYTES, F(snapshot_at_rss), .min = 1, .max = UINT64_MAX,
	  .bad = "--snapshot-at-rss needs a positive number of bytes, not '%s'"),
	OPTION("mmap", 0, NULL, "also trace anonymous mmap, munmap, mremap and brk: blocks\n"
			   "of their own kind, under frames [mmap] and [brk] (the\n"
			   "allocator's own mappings are not counted twice)",
	  OPT_FLAG, F(mmap)),
	OPTION("http", 0, "ADDR:PORT", "serve /debug/pprof/heap, /debug/pprof/allocs and /metrics\n"
				  "while tracing (ADDR defaults to 127.0.0.1); unix:PATH: on a\n"
				  "unix socket, mode 0600, yours; repeatable",
	  OPT_CALL, .call = set_http),
	OPTION("http-token", 0, "FILE", "require 'Authorization: Bearer TOKEN' on --http; TOKEN:\n"
				   "the line in FILE (mode 0600, yours or root's)",
	  OPT_CALL, .call = set_http_file),
	OPTION("http-cert", 0, "FILE", "serve --http's TCP ports over TLS: the certificate (PEM)", OPT_CALL,
	  .call = set_http_file),
	OPTION("http-key", 0, "FILE", "the private key of --http-cert (PEM, mode 0600)", OPT_CALL,
	  .call = set_http_file),
	OPTION("top", 0, "N", "stacks shown by -f top", OPT_U32, F(top), .min = 1, .max = UINT32_MAX, .dflt = "20",
	  .bad = "--top needs a positive count, not '%s'"),
	OPTION("max-allocs", 0, "N", "live blocks tracked", OPT_U32, F(max_live), .min = 1, .max = UINT32_MAX,
	  .dflt = STR(HT_DEFAULT_MAX_LIVE), .bad = "--max-allocs needs a positive count, not '%s'"),
	OPTION("max-stacks", 0, "N", "distinct stacks kept", OPT_U32, F(max_stacks), .min = 1, .max = UINT32_MAX,
	  .dflt = STR(HT_DEFAULT_MAX_STACKS), .bad = "--max-stacks needs a positive count, not '%s'"),
	OPTION("probe-at", 0, "WHERE", "auto (default): the first instruction the kernel emulates,\n"
				  "when that is provably equivalent; entry: function entries",
	  OPT_CHOICE, F(probe_at_entry), .choices = probe_at_names, .bad = "--probe-at takes auto or entry, not '%s'"),
	OPTION("list-probes", 0, NULL, "print where the probes would go and what each costs, one per line, and exit", OPT_FLAG, F(list_probes)),
	OPTION("max-depth", 0, "N", "frames kept per stack, 1-127", OPT_U32, F(max_depth), .min = 1,
	  .max = HT_MAX_STACK_DEPTH, .dflt = STR(HT_DEFAULT_MAX_DEPTH),
	  .bad = "--max-depth takes 1 to 127 frames, not '%s'"),
	OPTION("sym", 0, "SPEC", "also trace an allocator function (repeatable):\n"
			    "NAME[@OBJECT][:size=EXPR,objects=EXPR,ptr=EXPR,arena=EXPR,\n"
			    "free=argN,out=argN,round=page]\n"
			    "EXPR: sums of products of argN, numbers, ret and reads\n"
			    "of memory: *(argN-8), *(ret+N), *GLOBAL\n"
			    "(defaults size=arg1, objects=1, ptr=ret);\n"
			    "free=argN: a realloc, which frees the block in argN",
	  OPT_CALL, .call = add_sym),
	OPTION("free-sym", 0, "SPEC", "a function that frees one block: NAME[@OBJECT][:ptr=EXPR]", OPT_CALL, .call = add_sym),
	OPTION("reset-sym", 0, "SPEC", "a function that frees a whole arena: NAME[@OBJECT][:arena=EXPR]", OPT_CALL,
	  .call = add_sym),
	OPTION("preset", 0, "NAME", "trace a runtime's own allocator too, as --sym and --free-sym\n"
				"specs (repeatable): python (CPython's PyObject_* and PyMem_*),\n"
				"jemalloc (mallocx, rallocx, xallocx, sdallocx, dallocx);\n"
				"list: print them",
	  OPT_CALL, .call = add_preset, .values = preset_value),
	OPTION("no-libc", 0, NULL, "trace only the --sym functions, not the malloc family", OPT_FLAG, F(no_libc)),
	OPTION("lib", 0, "PATH", "the object whose malloc family to trace (default: found)", OPT_STRING, F(lib)),
	OPTION("debug-dir", 0, "DIR", "separate debug info, searched before /usr/lib/debug\n"
				  "(DIR/.build-id/xx/yyyy.debug, DIR/PATH/LINK): static --sym functions",
	  OPT_STRING, F(debug_dir)),
	OPTION("unwind", 0, "HOW", "auto (default): CFI (.eh_frame) where objects have it, frame\n"
			      "pointers elsewhere; dwarf: the same, required; fp: frame\npointers only",
	  OPT_CHOICE, F(unwind), .choices = unwind_names, .bad = "--unwind takes fp, dwarf or auto, not '%s'"),
	OPTION("stack-capture", 0, "M", "walk (default): heaptrace's own walk (see --unwind); kernel:\n"
				   "bpf_get_stack(), frame pointers, for comparison",
	  OPT_CHOICE, F(stack_mode), .choices = stack_capture_names,
	  .bad = "--stack-capture takes walk or kernel, not '%s'"),
	OPTION("follow-fork", 0, NULL, "trace the processes the target forks too, each into its\n"
				  "own profile: FILE.PID (-o FILE) or heaptrace.PID.EXT",
	  OPT_FLAG, F(follow_fork)),
	OPTION("merge", 0, NULL, "with --follow-fork: one profile of the whole process tree\n"
			    "(-f proto labels each sample with its pid)",
	  OPT_FLAG, F(merge)),
	OPTION("cgroup", 0, "DIR", "trace every process of a cgroup (v2, or a v1 hierarchy's\n"
				"directory): those in it now and those forked in it;\n"
				"see docs/process-trees.md",
	  OPT_STRING, F(cgroup)),
	OPTION("sample-rate", 0, "R", "record one allocation per R bytes on average (suffixes K,\n"
				 "M, G; at most 1G), picked by a Poisson process over bytes,\n"
				 "and scale the counts up into unbiased estimates; far\n"
				 "cheaper for always-on use.  0 (default): every allocation",
	  OPT_BYTES, F(sample_rate), .max = HT_MAX_SAMPLE_RATE,
	  .bad = "--sample-rate takes bytes, 0 to 1G (suffixes K, M, G), not '%s'"),
	OPTION("no-inject", 0, NULL, "uprobes only: no fast path written into the target (see\n"
				 "docs/fast-path.md); for comparison, or where writing into the\n"
				 "process is not acceptable",
	       OPT_FLAG, F(no_inject)),
	OPTION("limit-peak", 0, "SIZE", "exit with status 23 if the peak of in-use bytes goes above\nSIZE (suffixes K, M, G), naming the largest stacks",
	  OPT_CALL, .call = set_limit, .bad = "--limit-peak takes bytes (suffixes K, M, G), not '%s'"),
	OPTION("limit-leak", 0, "SIZE", "exit with status 23 if more than SIZE bytes are live at the\nend (0: any leak), naming the stacks that hold them",
	  OPT_CALL, .call = set_limit, .bad = "--limit-leak takes bytes (suffixes K, M, G), not '%s'"),
	OPTION("suppressions", 0, "FILE", "LeakSanitizer suppressions (leak:PATTERN lines; repeatable): the\n"
					  "live blocks of stacks with a matching function, source file or\n"
					  "module are not leaks (--limit-leak, -f top, the report)",
	  OPT_CALL, .call = add_suppressions),
	OPTION("no-default-suppressions", 0, NULL, "leave out the built-in suppressions of the C runtime's\n"
						   "one-time allocations (stdio buffers, TLS, locales)",
	       OPT_FLAG, F(no_default_suppressions)),
	OPTION("quiet", 'q', NULL, "no 'tracing PID N' line when tracing of -p PID begins", OPT_FLAG, F(quiet)),
	OPTION("verbose", 'v', NULL, "say what was attached where, and the event counters", OPT_CALL, .call = set_verbose),
	OPTION("help", 'h', NULL, "this text", OPT_HELP),
	OPTION("version", 0, NULL, "print the version", OPT_VERSION),
};

const struct command_opts trace_command = {
	.usage = "usage: heaptrace [OPTIONS] -p PID\n"
		 "       heaptrace [OPTIONS] [--] COMMAND [ARG...]\n"
		 "       heaptrace diff OLD NEW [-f top|collapsed|pprof|proto] [--value V]\n"
		 "Trace every heap allocation of a process from outside and write a heap profile.\n",
	.epilogue = "A launched COMMAND is traced from its first instruction; heaptrace exits with its\n"
		    "exit status.  With the profile on standard output, the command's standard output\n"
		    "goes to standard error.\n",
	.opts = trace_opts,
	.n = sizeof(trace_opts) / sizeof(trace_opts[0]),
	.stop_at_operand = 1,
};

/* What no single option can check. */
static int check(const struct trace_opts *o)
{
	if (o->pid && o->argv)
		return opt_bad("give either -p PID or a command, not both");
	if (!o->pid && !o->argv && !o->cgroup)
		return opt_bad("nothing to trace: give -p PID or a command");
	if (o->user && o->pid)
		return opt_bad("-u runs a launched command as a user; a -p process keeps its own");
	if (o->no_libc && !o->n_syms)
		return opt_bad("--no-libc leaves nothing to trace: add --sym or --preset");
	if (o->cgroup && (o->pid || o->argv))
		return opt_bad("--cgroup traces the processes of a cgroup: no -p PID or command with it");
	if (o->merge && !o->follow_fork && o->n_pids < 2 && !o->cgroup)
		return opt_bad("--merge makes one profile of the processes --follow-fork traces: it needs --follow-fork "
			       "(or several -p, or --cgroup)");
	if (o->diff && !o->interval && !o->interval_bytes)
		return opt_bad("--diff summarises growth between snapshots: it needs -i or --interval-bytes");
	/* Unsampled allocator calls leave no state: their mappings are told by the CFI walk's frames (bpf/maps.bpf.h). */
	if (o->mmap && o->sample_rate && (o->unwind == UNWIND_FP || o->stack_mode == HT_STACK_KERNEL))
		return opt_bad("--mmap with --sample-rate tells the allocator's own mappings by CFI frames: not with %s",
			       o->unwind == UNWIND_FP ? "--unwind fp" : "--stack-capture kernel");
	if ((o->http_token || o->http_cert || o->http_key) && !o->n_http)
		return opt_bad("%s configures --http, which is not given",
			       o->http_token ? "--http-token" : o->http_cert ? "--http-cert" : "--http-key");
	if (!o->http_cert != !o->http_key)
		return opt_bad("%s", o->http_cert ? "--http-cert needs --http-key" : "--http-key needs --http-cert");
	int tcp = 0;
	for (int i = 0; i < o->n_http; i++)
		tcp += !!strncmp(o->http[i], "unix:", 5);
	if (o->http_cert && !tcp)
		return opt_bad("--http-cert: TLS is for TCP ports, and every --http is a unix socket");
	return 0;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_opts o = { 0 };
	int first = opt_parse(&trace_command, argc, argv, &o), rc;

	if (first >= 0 && first < argc)
		o.argv = argv + first;
	if (first >= 0 && !o.no_default_suppressions && suppress_add_builtin(&o.suppress))
		first = -1;
	rc = first < 0 || check(&o) ? 2 : session_run(&o);
	suppress_free(o.suppress);
	for (int i = 0; i < o.n_syms; i++)
		symspec_free(&o.syms[i]);
	free(o.http_token);
	free(o.http_cert);
	free(o.http_key);
	return rc;
}
