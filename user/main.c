/* heaptrace: options, and the wiring target -> probes -> BPF -> profile -> output. */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>

#include "allocator.h"
#include "follow.h"
#include "http.h"
#include "log.h"
#include "monitor.h"
#include "output/output.h"
#include "probes.h"
#include "profile.h"
#include "symbolize.h"
#include "snapshot.h"
#include "symspec.h"
#include "target.h"
#include "tracer.h"
#include "unwind.h"
#include "version.h"


struct options {
	pid_t pid;
	char **argv;            /* command to launch */
	const char *output;
	enum ht_format format;
	enum ht_value value;
	double duration;
	uint32_t max_live, max_stacks;
	size_t top;
	bool probe_at_entry;
	bool list_probes;
	uint32_t max_depth;
	enum ht_stack_mode stack_mode;
	enum { UNWIND_AUTO, UNWIND_FP, UNWIND_DWARF } unwind;
	struct sym_spec syms[HT_MAX_SPECS];     /* --sym, --free-sym, --reset-sym in order */
	const char *sym_option[HT_MAX_SPECS];
	int n_syms;
	bool no_libc;
	const char *lib;                        /* --lib: the malloc object, overriding discovery */
	double interval;                        /* -i: snapshot period */
	bool diff;                              /* --diff: growth summary per snapshot */
	bool at_peak;
	uint64_t peak_step;
	double min_age;
	const char *http;                       /* --http ADDR:PORT */
	bool follow_fork;
	uint64_t sample_rate;                   /* --sample-rate bytes, 0: exact */
};

static void usage(FILE *f)
{
	fputs("usage: heaptrace [OPTIONS] -p PID\n"
	      "       heaptrace [OPTIONS] [--] COMMAND [ARG...]\n"
	      "       heaptrace diff OLD NEW [-f top|collapsed|pprof|proto] [--value V]\n"
	      "Trace every heap allocation of a process from outside and write a heap profile.\n"
	      "\n"
	      "  -p, --pid PID         attach to a running process until Ctrl-C, SIGTERM,\n"
	      "                        --duration or its exit\n"
	      "  -o, --output FILE     where the profile goes (default: standard output)\n"
	      "  -f, --format FMT      pprof (default, legacy text) | proto (gzipped protobuf,\n"
	      "                        symbols inside) | collapsed | top\n"
	      "      --collapsed       same as -f collapsed\n"
	      "      --value V         inuse_space (default) | inuse_objects | alloc_space |\n"
	      "                        alloc_objects: the counter collapsed and top report\n"
	      "  -d, --duration SEC    stop tracing after SEC seconds\n"
	      "  -i, --interval SEC    write a snapshot every SEC seconds, and a final one:\n"
	      "                        PREFIX.0001.heap, ... (PREFIX: -o, default heaptrace.PID);\n"
	      "                        with -f top on a terminal, a live view instead\n"
	      "      --diff            with -i: print what grew since the previous snapshot\n"
	      "      --at-peak         also write the profile as it stood at the peak of in-use\n"
	      "                        bytes (to FILE.peak, PREFIX.peak.heap or heaptrace.PID.peak.heap)\n"
	      "      --peak-step BYTES rise that makes a new at-peak profile (default: 5%% of\n"
	      "                        the last, at least 1 MiB); the peak itself is exact\n"
	      "      --min-age SEC     in-use counts only blocks live for at least SEC seconds\n"
	      "      --http ADDR:PORT  serve /debug/pprof/heap, /debug/pprof/allocs and /metrics\n"
	      "                        while tracing (ADDR defaults to 127.0.0.1)\n"
	      "      --top N           stacks shown by -f top (default 20)\n"
	      "      --max-allocs N    live blocks tracked (default 1048576)\n"
	      "      --max-stacks N    distinct stacks kept (default 65536)\n"
	      "      --probe-at WHERE  auto (default): the first instruction the kernel emulates,\n"
	      "                        when that is provably equivalent; entry: function entries\n"
	      "      --list-probes     print where the probes would go, one per line, and exit\n"
	      "      --max-depth N     frames kept per stack, 1-127 (default 64)\n"
	      "      --sym SPEC        also trace an allocator function (repeatable):\n"
	      "                        NAME[@OBJECT][:size=EXPR,objects=EXPR,ptr=EXPR,arena=EXPR]\n"
	      "                        EXPR: sums of products of argN, numbers and ret\n"
	      "                        (defaults size=arg1, objects=1, ptr=ret)\n"
	      "      --free-sym SPEC   a function that frees one block: NAME[@OBJECT][:ptr=EXPR]\n"
	      "      --reset-sym SPEC  a function that frees a whole arena: NAME[@OBJECT][:arena=EXPR]\n"
	      "      --no-libc         trace only the --sym functions, not the malloc family\n"
	      "      --lib PATH        the object whose malloc family to trace (default: found)\n"
	      "      --unwind HOW      auto (default): CFI (.eh_frame) where objects have it, frame\n"
	      "                        pointers elsewhere; dwarf: the same, required; fp: frame\n"
	      "                        pointers only\n"
	      "      --stack-capture M walk (default): heaptrace's own walk (see --unwind); kernel:\n"
	      "                        bpf_get_stack(), frame pointers, for comparison\n"
	      "      --follow-fork     trace the processes the target forks too, each into its\n"
	      "                        own profile: FILE.PID (-o FILE) or heaptrace.PID.EXT\n"
	      "      --sample-rate R   record one allocation per R bytes on average (suffixes K,\n"
	      "                        M, G; at most 1G), picked by a Poisson process over bytes,\n"
	      "                        and scale the counts up into unbiased estimates; far\n"
	      "                        cheaper for always-on use.  0 (default): every allocation\n"
	      "  -v, --verbose         say what was attached where, and the event counters\n"
	      "  -h, --help            this text\n"
	      "      --version         print the version\n"
	      "\n"
	      "A launched COMMAND is traced from its first instruction; heaptrace exits with its\n"
	      "exit status.  With the profile on standard output, the command's standard output\n"
	      "goes to standard error.\n",
	      f);
}

static int bad(const char *fmt, const char *arg)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	ht_err("%s (see heaptrace --help)", msg);
	return -1;
}

static int parse_u32(const char *s, uint32_t *out, uint32_t min)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);

	if (errno || end == s || *end || *s == '-' || v < min || v > UINT32_MAX)
		return -1;
	*out = v;
	return 0;
}

/* BYTES[K|M|G], binary multiples: "512K" is 524288. */
static int parse_bytes(const char *s, uint64_t *out, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;

	if (errno || end == s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	if (*end && !end[1]) {
		const char *units = "kKmMgG", *u = strchr(units, *end);
		if (!u)
			return -1;
		shift = 10 * (1 + (u - units) / 2);
		end++;
	}
	if (*end || v > max >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !(*out > 0) || *out > 1e9 ? -1 : 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_COLLAPSED = 256, OPT_VALUE, OPT_VERSION, OPT_MAX_ALLOCS, OPT_MAX_STACKS, OPT_TOP,
	       OPT_PROBE_AT, OPT_LIST_PROBES, OPT_MAX_DEPTH, OPT_STACK_CAPTURE, OPT_SYM, OPT_FREE_SYM,
	       OPT_RESET_SYM, OPT_NO_LIBC, OPT_LIB, OPT_DIFF, OPT_AT_PEAK, OPT_PEAK_STEP, OPT_MIN_AGE,
	       OPT_HTTP, OPT_FOLLOW_FORK, OPT_UNWIND, OPT_SAMPLE_RATE };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "collapsed", no_argument, NULL, OPT_COLLAPSED },
		{ "value", required_argument, NULL, OPT_VALUE },
		{ "duration", required_argument, NULL, 'd' },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "max-allocs", required_argument, NULL, OPT_MAX_ALLOCS },
		{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },
		{ "probe-at", required_argument, NULL, OPT_PROBE_AT },
		{ "list-probes", no_argument, NULL, OPT_LIST_PROBES },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "stack-capture", required_argument, NULL, OPT_STACK_CAPTURE },
		{ "sym", required_argument, NULL, OPT_SYM },
		{ "free-sym", required_argument, NULL, OPT_FREE_SYM },
		{ "reset-sym", required_argument, NULL, OPT_RESET_SYM },
		{ "no-libc", no_argument, NULL, OPT_NO_LIBC },
		{ "lib", required_argument, NULL, OPT_LIB },
		{ "interval", required_argument, NULL, 'i' },
		{ "diff", no_argument, NULL, OPT_DIFF },
		{ "at-peak", no_argument, NULL, OPT_AT_PEAK },
		{ "peak-step", required_argument, NULL, OPT_PEAK_STEP },
		{ "min-age", required_argument, NULL, OPT_MIN_AGE },
		{ "http", required_argument, NULL, OPT_HTTP },
		{ "follow-fork", no_argument, NULL, OPT_FOLLOW_FORK },
		{ "unwind", required_argument, NULL, OPT_UNWIND },
		{ "sample-rate", required_argument, NULL, OPT_SAMPLE_RATE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	uint32_t u;
	int c;

	*o = (struct options){ .max_live = HT_DEFAULT_MAX_LIVE, .max_stacks = HT_DEFAULT_MAX_STACKS,
			       .top = 20, .max_depth = HT_DEFAULT_MAX_DEPTH };
	opterr = 0;
	/* '+': options end at the command, whose own options are its business. */
	/* '+': options end at the command; ':': a missing value is told apart from an unknown option. */
	while ((c = getopt_long(argc, argv, "+:p:o:f:d:i:vh", longopts, NULL)) != -1) {

		switch (c) {
		case 'p':
			if (parse_u32(optarg, &u, 1) || u > INT_MAX)
				return bad("-p needs a process id, not '%s'", optarg);
			o->pid = u;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			if (format_parse(optarg, &o->format))
				return bad("unknown format '%s': pprof, proto, collapsed or top", optarg);
			break;
		case OPT_COLLAPSED:
			o->format = FMT_COLLAPSED;
			break;
		case OPT_VALUE:
			if (value_parse(optarg, &o->value))
				return bad("unknown value '%s': inuse_space, inuse_objects, alloc_space or alloc_objects",
					   optarg);
			break;
		case 'd':
			if (parse_seconds(optarg, &o->duration))
				return bad("-d needs a positive number of seconds, not '%s'", optarg);
			break;
		case OPT_TOP:
			if (parse_u32(optarg, &u, 1))
				return bad("--top needs a positive count, not '%s'", optarg);
			o->top = u;
			break;
		case OPT_MAX_ALLOCS:
			if (parse_u32(optarg, &o->max_live, 1))
				return bad("--max-allocs needs a positive count, not '%s'", optarg);
			break;
		case OPT_MAX_STACKS:
			if (parse_u32(optarg, &o->max_stacks, 1))
				return bad("--max-stacks needs a positive count, not '%s'", optarg);
			break;
		case OPT_PROBE_AT:
			if (strcmp(optarg, "auto") && strcmp(optarg, "entry"))
				return bad("--probe-at takes auto or entry, not '%s'", optarg);
			o->probe_at_entry = !strcmp(optarg, "entry");
			break;
		case OPT_MAX_DEPTH:
			if (parse_u32(optarg, &o->max_depth, 1) || o->max_depth > HT_MAX_STACK_DEPTH)
				return bad("--max-depth takes 1 to 127 frames, not '%s'", optarg);
			break;
		case OPT_STACK_CAPTURE:
			if (!strcmp(optarg, "walk"))
				o->stack_mode = HT_STACK_WALK;
			else if (!strcmp(optarg, "kernel"))
				o->stack_mode = HT_STACK_KERNEL;
			else
				return bad("--stack-capture takes walk or kernel, not '%s'", optarg);
			break;
		case OPT_UNWIND:
			if (!strcmp(optarg, "auto"))
				o->unwind = UNWIND_AUTO;
			else if (!strcmp(optarg, "fp"))
				o->unwind = UNWIND_FP;
			else if (!strcmp(optarg, "dwarf"))
				o->unwind = UNWIND_DWARF;
			else
				return bad("--unwind takes fp, dwarf or auto, not '%s'", optarg);
			break;
		case OPT_SYM:
		case OPT_FREE_SYM:
		case OPT_RESET_SYM: {
			enum ht_spec_kind kind = c == OPT_SYM ? HT_SPEC_ALLOC : c == OPT_FREE_SYM ? HT_SPEC_FREE : HT_SPEC_RESET;
			const char *name = c == OPT_SYM ? "--sym" : c == OPT_FREE_SYM ? "--free-sym" : "--reset-sym";
			char err[512];

			if (o->n_syms == HT_MAX_SPECS)
				return bad("too many symbol specs (at most %s)", "32");
			if (symspec_parse(optarg, kind, &o->syms[o->n_syms], err, sizeof(err))) {
				ht_err("%s %s", name, err);
				return -1;
			}
			o->sym_option[o->n_syms++] = name;
			break;
		}
		case OPT_NO_LIBC:
			o->no_libc = true;
			break;
		case OPT_LIB:
			o->lib = optarg;
			break;
		case 'i':
			if (parse_seconds(optarg, &o->interval))
				return bad("-i needs a positive number of seconds, not '%s'", optarg);
			break;
		case OPT_DIFF:
			o->diff = true;
			break;
		case OPT_AT_PEAK:
			o->at_peak = true;
			break;
		case OPT_PEAK_STEP: {
			char *e;
			errno = 0;
			o->peak_step = strtoull(optarg, &e, 10);
			if (errno || e == optarg || *e || *optarg == '-' || !o->peak_step)
				return bad("--peak-step needs a positive number of bytes, not '%s'", optarg);
			break;
		}
		case OPT_HTTP:
			if (http_parse_addr(optarg, NULL))
				return -1;
			o->http = optarg;
			break;
		case OPT_MIN_AGE:
			if (parse_seconds(optarg, &o->min_age))
				return bad("--min-age needs a positive number of seconds, not '%s'", optarg);
			break;
		case OPT_LIST_PROBES:
			o->list_probes = true;
			break;
		case OPT_FOLLOW_FORK:
			o->follow_fork = true;
			break;
		case OPT_SAMPLE_RATE:
			if (parse_bytes(optarg, &o->sample_rate, HT_MAX_SAMPLE_RATE))
				return bad("--sample-rate takes bytes, 0 to 1G (suffixes K, M, G), not '%s'", optarg);
			break;
		case 'v':
			ht_verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_VERSION:
			printf("heaptrace %s\n", HEAPTRACE_VERSION);
			exit(0);
		case ':':
			return bad("option %s needs a value", argv[optind - 1]);
		default:
			return bad("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->argv = argv + optind;
	if (o->pid && o->argv)
		return bad("give either -p PID or a command, not both%s", "");
	if (!o->pid && !o->argv)
		return bad("nothing to trace: give -p PID or a command%s", "");
	if (o->no_libc && !o->n_syms)
		return bad("--no-libc leaves nothing to trace: add --sym%s", "");
	if (o->diff && !o->interval)
		return bad("--diff summarises growth between snapshots: it needs -i%s", "");
	return 0;
}


/* The malloc family of the allocator the target uses (and libc's), and the --sym functions. */
static int plan_probes(const struct options *o, const struct target *t, struct probe_plan *plan)
{
	struct objlist objs;
	char *primary = NULL, *libc = NULL;
	int err = -1;

	probes_init(plan, o->probe_at_entry);
	if (target_objects(t, &objs))
		return -1;
	if (!o->no_libc &&
	    (allocator_choose(&objs, o->lib, &primary, &libc) || probes_add_malloc(plan, primary, true) ||
	     (libc && probes_add_malloc(plan, libc, false))))
		goto out;
	/* A spec naming what is not there is bad input, like a bad spec: exit status 2. */
	err = 2;
	for (int i = 0; i < o->n_syms; i++)
		if (probes_add_symbol(plan, &o->syms[i], o->sym_option[i], &objs))
			goto out;
	err = 0;
out:
	free(primary);
	free(libc);
	objlist_free(&objs);
	return err;
}

/* The traced command line, for the record in profiles. */
static char *command_line(const struct options *o, const struct target *t)
{
	char *s = NULL, path[64];
	size_t len = 0;
	FILE *m = open_memstream(&s, &len);

	if (!m)
		return NULL;
	if (o->argv) {
		for (char **a = o->argv; *a; a++)
			fprintf(m, "%s%s", a == o->argv ? "" : " ", *a);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/cmdline", t->pid);
		FILE *f = fopen(path, "re");
		int c, pending = 0;
		/* Arguments end in NUL: a space only between two of them. */
		while (f && (c = fgetc(f)) != EOF) {
			if (!c) {
				pending = 1;
				continue;
			}
			if (pending)
				fputc(' ', m);
			pending = 0;
			fputc(c, m);
		}
		if (f)
			fclose(f);
	}
	fclose(m);
	return s;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* --follow-fork: what a forked child needs to be traced like its parent. */
struct fork_ctx {
	const struct probe_plan *plan;
	struct tracer *tr;
	uint32_t next_slot;
	bool stopped;           /* tracing is over: later children run untraced */
};

static uint32_t trace_child(void *arg, pid_t child, uint32_t parent_slot)
{
	struct fork_ctx *fc = arg;

	if (fc->stopped)
		return 0;
	if (fc->next_slot >= HT_MAX_PROCS) {
		ht_err("--follow-fork: %d processes traced already; PID %d is not", HT_MAX_PROCS, child);
		return 0;
	}
	uint32_t slot = fc->next_slot;
	if (tracer_add_proc(fc->tr, child, slot, parent_slot) || probes_attach(fc->plan, fc->tr, child)) {
		ht_err("--follow-fork: cannot trace child PID %d", child);
		return 0;
	}
	fc->next_slot++;
	ht_info("following child PID %d", child);
	return slot;
}

static const char *format_ext(enum ht_format f)
{
	return f == FMT_PROTO ? "pb.gz" : f == FMT_COLLAPSED ? "collapsed" : f == FMT_TOP ? "top" : "heap";
}

/* Each followed child's profile, beside the target's: FILE.PID, or heaptrace.PID.EXT. */
static int write_children(const struct options *o, struct follow *fl, const struct tracer *tr,
			  const struct profile_opts *opts)
{
	int rc = 0;

	follow_refresh_maps(fl);
	for (size_t i = 0; i < fl->n_kids; i++) {
		const struct follow_child *k = &fl->kids[i];
		struct profile p;
		char path[4200];

		if (k->slot == UINT32_MAX || k->slot == 0)
			continue;
		if (o->output)
			snprintf(path, sizeof(path), "%s.%d", o->output, k->pid);
		else
			snprintf(path, sizeof(path), "heaptrace.%d.%s", k->pid, format_ext(o->format));
		if (profile_read(&p, tr, k->slot, k->pid, k->maps, opts)) {
			rc = 1;
			continue;
		}
		if (p.totals.execs)
			ht_err("child PID %d executed a new program: %" PRIu64 " live blocks of the old one were "
			       "dropped; tracing went on in the new one", k->pid, (uint64_t)p.totals.exec_dropped);
		FILE *f = create_output(path);
		if (!f || output_write(f, o->format, &p, o->value, o->top)) {
			ht_err("cannot write the profile of child PID %d to %s: %s", k->pid, path, strerror(errno));
			rc = 1;
		} else {
			ht_err("child PID %d (of PID %d): profile in %s", k->pid, k->parent, path);
		}
		if (f)
			fclose(f);
		profile_free(&p);
	}
	if (fl->not_followed)
		ht_err("--follow-fork: %zu child processes were not traced", fl->not_followed);
	return rc;
}

static void maps_changed(void *uw, const char *maps, const char *root)
{
	unwind_maps_changed(uw, maps, root);
}

/*
 * --unwind: CFI tables for the target's objects, compiled (or taken from
 * the cache) before the BPF object is loaded.  The stack mode to use.
 */
static enum ht_stack_mode plan_unwind(const struct options *o, struct target *t, struct unwind *uw)
{
	struct objlist objs;

	if (o->stack_mode == HT_STACK_KERNEL || o->unwind == UNWIND_FP)
		return o->stack_mode;
	if (!target_objects(t, &objs)) {
		unwind_add_objects(uw, objs.p, objs.n);
		objlist_free(&objs);
	}
	if (!uw->rows) {
		if (o->unwind == UNWIND_DWARF)
			ht_err("--unwind dwarf: none of the target's objects has CFI (.eh_frame): frame pointers only");
		return HT_STACK_WALK;
	}
	t->maps_changed = maps_changed;
	t->maps_changed_arg = uw;
	return HT_STACK_DWARF;
}

static int load_tracer(struct tracer *tr, const struct tracer_config *cfg, struct unwind *uw, struct target *t)
{
	if (tracer_load(tr, cfg))
		return -1;
	if (cfg->stack_mode != HT_STACK_DWARF)
		return 0;
	if (unwind_load(uw, tr))
		return -1;
	/* -p: the process's code mappings are known now; a launched command's come with its first refresh. */
	if (t->maps && t->maps_changed)
		t->maps_changed(t->maps_changed_arg, t->maps, t->root);
	return 0;
}

static void report_resources(const struct tracer *tr)
{
	uint64_t live_bytes;
	uint32_t live_entries;
	uint64_t total = tracer_map_memory(tr, &live_bytes, &live_entries);
	struct rusage ru;

	ht_info("kernel memory: %.1f MiB in BPF maps; the live-block map %.1f MiB for %u blocks, "
		"%.0f bytes per tracked allocation", total / 1048576.0, live_bytes / 1048576.0, live_entries,
		live_entries ? (double)live_bytes / live_entries : 0.0);
	if (!getrusage(RUSAGE_SELF, &ru))
		ht_info("heaptrace peak RSS: %ld KiB", ru.ru_maxrss);
}

static void report_counters(const uint64_t counters[HT_COUNTER_MAX])
{
	char buf[1024];

	output_losses(buf, sizeof(buf), counters, false);
	if (!*buf && !ht_verbose)
		return;
	output_losses(buf, sizeof(buf), counters, true);
	ht_err("events: %s", buf);
}

/* heaptrace diff OLD NEW: what changed per stack between two profiles. */
static int run_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "value", required_argument, NULL, 'V' },
		{ "top", required_argument, NULL, 'n' },
		{ "collapsed", no_argument, NULL, 'c' },
		{ 0 },
	};
	enum ht_format fmt = FMT_TOP;
	enum ht_value v = V_INUSE_SPACE;
	uint32_t top = 20;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:", longopts, NULL)) != -1) {
		if (c == 'f' && !format_parse(optarg, &fmt))
			continue;
		if (c == 'c') {
			fmt = FMT_COLLAPSED;
			continue;
		}
		if (c == 'V' && !value_parse(optarg, &v))
			continue;
		if (c == 'n' && !parse_u32(optarg, &top, 1))
			continue;
		ht_err("heaptrace diff: bad option or value '%s' (usage: heaptrace diff OLD NEW "
		       "[-f top|collapsed|pprof] [--value V])", argv[optind - 1]);
		return 2;
	}
	if (argc - optind != 2) {
		ht_err("usage: heaptrace diff OLD NEW [-f top|collapsed|pprof] [--value V]");
		return 2;
	}

	struct profile a, b, d;
	char *maps_a, *maps_b;
	int rc = 1;

	if (profile_read_text(argv[optind], &a, &maps_a))
		return 1;
	if (profile_read_text(argv[optind + 1], &b, &maps_b)) {
		profile_free(&a);
		free(maps_a);
		return 1;
	}
	if (!profile_diff(&a, &b, &d)) {
		if (fmt == FMT_PPROF) {
			/* The legacy format has no negative counts: a pprof diff holds the growth. */
			size_t out = 0;
			for (size_t i = 0; i < d.n; i++) {
				struct ht_site *c2 = &d.stacks[i].c;
				if (c2->inuse_objects < 0) c2->inuse_objects = 0;
				if (c2->inuse_bytes < 0) c2->inuse_bytes = 0;
				if ((int64_t)c2->alloc_objects < 0) c2->alloc_objects = 0;
				if ((int64_t)c2->alloc_bytes < 0) c2->alloc_bytes = 0;
				if (c2->inuse_bytes || c2->alloc_bytes)
					d.stacks[out++] = d.stacks[i];
				else
					free(d.stacks[i].pcs);
			}
			d.n = out;
			profile_normalize(&d);
		}
		d.maps = maps_b;
		rc = output_write(stdout, fmt, &d, v, top) ? 1 : 0;
		if (rc)
			ht_err("cannot write the diff");
		profile_free(&d);
	}
	profile_free(&a);
	profile_free(&b);
	free(maps_a);
	free(maps_b);
	return rc;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct target t = { .go_fd = -1, .pidfd = -1 };
	struct probe_plan plan = { 0 };
	struct tracer tr = { 0 };
	struct profile prof;
	struct http_server *http = NULL;
	struct fork_ctx fc = { .plan = &plan, .tr = &tr, .next_slot = 1 };
	struct unwind uw = { 0 };
	struct follow fl = { .on_fork = trace_child, .arg = &fc };
	char *command = NULL;
	FILE *out = stdout;
	int rc = 1;
	double t0 = now_ms(), t1;

	/* HTTP request threads would each get a malloc arena that is never given back. */
	mallopt(M_ARENA_MAX, 2);
	if (argc > 1 && !strcmp(argv[1], "diff"))
		return run_diff(argc - 1, argv + 1);
	if (parse_options(argc, argv, &o))
		return 2;
	/* Where the output goes is checked now, not after an hour of tracing. */
	if (o.output && !o.interval && !(out = create_output(o.output))) {
		ht_err("cannot create %s: %s", o.output, strerror(errno));
		return 1;
	}
	if ((o.interval && o.output) || o.at_peak) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", o.output ? o.output : ".");
		char *slash = o.output ? strrchr(dir, '/') : NULL;
		if (slash)
			*slash = '\0';
		else if (o.output)
			snprintf(dir, sizeof(dir), ".");
		if (access(*dir ? dir : "/", W_OK)) {
			ht_err("cannot write files in %s: %s", *dir ? dir : "/", strerror(errno));
			return 1;
		}
	}
	if (monitor_init()) {
		ht_err("cannot set up signal handling: %s", strerror(errno));
		goto done;
	}
	rc = o.argv ? target_prepare(&t, o.argv) : target_attach(&t, o.pid);
	if (rc)
		goto done;
	rc = 1;
	if ((rc = plan_probes(&o, &t, &plan))) {
		rc = rc < 0 ? 1 : rc;
		goto done;
	}
	rc = 1;
	if (o.list_probes) {
		probes_print(&plan, out);
		rc = 0;
		goto done;
	}
	if (o.follow_fork)
		t.follow = &fl;
	/* The command's stdout moves to stderr only when the profile (or the live view) takes stdout. */
	bool profile_on_stdout = !o.output && (!o.interval || (o.format == FMT_TOP && isatty(STDOUT_FILENO)));
	if (o.argv && (rc = target_launch(&t, o.argv, profile_on_stdout)))
		goto done;
	rc = 1;

	/*
	 * Sampling skips the return probes of unsampled calls with uprobe
	 * sessions.  Not with --follow-fork: every process's link runs on the
	 * shared probe, and another process's link asks for the return.
	 */
	struct tracer_config cfg = { .tgid = t.pid, .max_live = o.max_live, .max_stacks = o.max_stacks,
				     .specs = plan.specs, .n_specs = plan.n, .multi = true,
				     .session = o.sample_rate && !o.follow_fork, .sample_rate = o.sample_rate,
				     .max_depth = o.max_depth, .stack_mode = plan_unwind(&o, &t, &uw),
				     .peak_step = o.peak_step, .follow_fork = o.follow_fork };
	cfg.unwind_rows = cfg.stack_mode == HT_STACK_DWARF ? unwind_capacity(&uw) : 0;
	if (load_tracer(&tr, &cfg, &uw, &t))
		goto kill_child;
	/* -p: forks from now on wait for us (they are handled once monitoring starts). */
	if (o.follow_fork && !t.launched && follow_seize(&t))
		goto kill_child;
	for (int attached; (attached = probes_attach(&plan, &tr, t.pid));) {
		if (attached < 0)
			goto kill_child;
		if (attached == 1) {
			ht_info("no uprobe_multi in this kernel: one perf event per probe");
			cfg.multi = false;
		} else {
			ht_info("no uprobe sessions in this kernel: unsampled calls take their return probe too");
		}
		cfg.session = false;
		tracer_close(&tr);
		if (load_tracer(&tr, &cfg, &uw, &t))
			goto kill_child;
	}
	if (o.sample_rate)
		ht_info("sampling one allocation per %" PRIu64 " bytes on average; %s", o.sample_rate,
			tr.session ? "unsampled calls skip their return probe (uprobe sessions)" :
				     "unsampled calls still take their return probe");
	ht_info("tracing PID %d (%s), attached in %.1f ms", t.pid, t.exe, now_ms() - t0);

	char prefix[4096];
	command = command_line(&o, &t);
	struct snapshots ss = { .fmt = o.format, .value = o.value, .top = o.top, .diff = o.diff,
				.opts = { .min_age = o.min_age, .start_ns = monotonic_ns(), .command = command },
				.tr = &tr, .t = &t };
	if (o.interval) {
		if (o.output)
			snprintf(prefix, sizeof(prefix), "%s", o.output);
		else
			snprintf(prefix, sizeof(prefix), "heaptrace.%d", t.pid);
		ss.prefix = prefix;
		ss.live = o.format == FMT_TOP && !o.output && isatty(STDOUT_FILENO);
	}

	/* Everything that can fail is set up before a launched command runs its first instruction. */
	if (o.http && !(http = http_start(o.http, &tr, &t, &ss.opts)))
		goto kill_child;
	if (target_start(&t)) {
		ht_err("cannot start %s", t.exe);
		goto kill_child;
	}

	struct stop st = monitor_run(&t, o.duration, o.interval, snapshot_tick, &ss);
	fc.stopped = true;
	monitor_release_signals();
	http_stop(http);
	if (!t.exited)
		target_refresh_maps(&t);
	tracer_detach(&tr);
	if (st.why == STOP_DURATION)
		ht_info("stopped after %g s", o.duration);

	t1 = now_ms();
	if (profile_read(&prof, &tr, 0, t.pid, t.maps, &ss.opts))
		goto done;
	ht_info("read %zu stacks from the maps in %.1f ms", prof.n, now_ms() - t1);
	report_counters(prof.counters);
	/* A launched command's own first execve is ours, not news. */
	if (prof.totals.execs > (t.launched ? 1u : 0u))
		ht_err("PID %d executed a new program: %" PRIu64 " live blocks of the old one were dropped; "
		       "tracing went on in the new one", t.pid, (uint64_t)prof.totals.exec_dropped);
	t1 = now_ms();
	if (o.interval) {
		if (snapshot_write(&ss, &prof) || ss.failed)
			ht_err("%d of %d snapshots lost", ss.failed, ss.seq);
		rc = ss.failed ? 1 : 0;
		/* snapshot_write kept the profile as the previous one */
		prof = ss.prev;
		prof.maps = t.maps;
		ss.have_prev = false;
	} else {
		rc = output_write(out, o.format, &prof, o.value, o.top) ? 1 : 0;
		if (rc)
			ht_err("cannot write the profile: %s", strerror(errno));
	}
	ht_info("wrote the profile in %.1f ms", now_ms() - t1);
	if (o.at_peak) {
		char path[4200];
		snapshot_peak_path(o.output, ss.prefix, t.pid, path, sizeof(path));
		profile_at_peak(&prof);
		FILE *f = create_output(path);
		if (!f || output_write(f, o.format, &prof, o.value, o.top)) {
			ht_err("cannot write the at-peak profile %s: %s", path, strerror(errno));
			rc = 1;
		} else {
			ht_err("at-peak profile: %s (peak %" PRIu64 " bytes in use, %.3f s after the start)", path,
			       (uint64_t)prof.totals.peak_bytes,
			       prof.totals.peak_ns > ss.opts.start_ns ? (prof.totals.peak_ns - ss.opts.start_ns) / 1e9 : 0);
		}
		if (f)
			fclose(f);
	}
	if (o.follow_fork && write_children(&o, &fl, &tr, &ss.opts))
		rc = 1;
	snapshots_free(&ss);
	report_resources(&tr);
	if (prof.trimmed)
		ht_info("%zu stacks ended where frame-pointer unwinding left executable memory",
			prof.trimmed);
	profile_free(&prof);

	if (t.launched) {
		/* Like time(1): the command runs to its end and its status is ours. */
		if (!t.exited && st.why == STOP_SIGNAL && st.sent_to_us)
			kill(t.pid, st.signo);
		target_reap(&t, true);
		if (!rc)
			rc = target_exit_code(&t);
	}
	goto done;

kill_child:
	http_stop(http);
	if (t.launched && t.pid > 0 && !t.exited) {
		kill(t.pid, SIGKILL);
		target_reap(&t, true);
	}
done:
	free(command);
	tracer_close(&tr);
	probes_free(&plan);
	for (int i = 0; i < o.n_syms; i++)
		symspec_free(&o.syms[i]);
	target_free(&t);
	follow_free(&fl);
	unwind_free(&uw);
	if (out != stdout)
		fclose(out);
	return rc;
}
