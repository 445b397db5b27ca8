#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "tracer/tracer.h"  /* before the skeletons: they name our shared structs */
#include "heaptrace.skel.h"
#include "alloc_session.skel.h"
#include "util/array.h"
#include "util/log.h"
#include "util/time.h"
#include "tracer/uprobe_multi.h"
#include "tracer/ktypes.h"
#include "tracer/internal.h"
#include "tracer/drain.h"


/*
 * When libbpf said what, during a load: its phases have no hooks, but
 * their debug messages come in a known order (kernel BTF, maps, CO-RE
 * relocations, then the programs).
 */
static __thread struct {
	double btf, first_map, last_map, last_core;
} marks;            /* per thread: the stub's programs load side by side (apart.c) */

__attribute__((format(printf, 2, 0))) static int libbpf_log(enum libbpf_print_level level, const char *fmt,
							    va_list ap)
{
	if (level == LIBBPF_DEBUG) {
		if (strstr(fmt, "loading kernel BTF"))
			marks.btf = now_ms();
		else if (strstr(fmt, "created successfully")) {
			marks.last_map = now_ms();
			if (!marks.first_map)
				marks.first_map = marks.last_map;
		} else if (strstr(fmt, "CO-RE relocating")) {
			marks.last_core = now_ms();
		}
		return 0;
	}
	/* libbpf's own chatter is for -v; heaptrace reports failures in one line itself. */
	if (level == LIBBPF_WARN && !ht_verbose) {
		tracer_vlog_libbpf(fmt, ap);
		return 0;
	}
	if (!ht_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void explain_load_error(int err)
{
	char why[700];

	if (err == -EPERM || (err == -EACCES && geteuid() != 0))
		ht_err("not permitted to load BPF programs: run as root, or grant CAP_BPF, CAP_PERFMON "
		       "and CAP_SYS_RESOURCE (and CAP_SYS_PTRACE for -p on another user's process)");
	else if (err == -ENOMEM || err == -E2BIG)
		ht_err("cannot create BPF maps (%s): lower --max-allocs or --max-stacks", strerror(-err));
	else if (tracer_refusal(why, sizeof(why)))
		ht_err("cannot load BPF programs: %s (-v prints the verifier's whole log; docs/kernels.md says what "
		       "heaptrace needs of a kernel: a refusal on a kernel it names is a bug to report)", why);
	else if (access("/sys/kernel/btf/vmlinux", R_OK))
		ht_err("cannot load BPF programs: %s (this kernel has no BTF, /sys/kernel/btf/vmlinux: heaptrace needs "
		       "CONFIG_DEBUG_INFO_BTF)", strerror(-err));
	else
		ht_err("cannot load BPF programs: %s (-v says more; docs/kernels.md says what heaptrace needs of a kernel)",
		       strerror(-err));
}

/* The lowest address a mapping can have: frame pointers below it end a stack walk. */
static uint64_t mmap_min_addr(void)
{
	FILE *f = fopen("/proc/sys/vm/mmap_min_addr", "re");
	unsigned long v = 0;

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 1;
}

/* A program of the main object (alloc_session is session.bpf.c's). */
struct bpf_program *tracer_main_prog(const struct heaptrace *skel, enum tracer_prog prog)
{
	return prog == PROG_ALLOC_ENTER ? skel->progs.alloc_enter :
	       prog == PROG_ALLOC_RETURN ? skel->progs.alloc_return :
	       prog == PROG_FREE_ENTER ? skel->progs.free_enter :
	       prog == PROG_RESET_ENTER ? skel->progs.reset_enter :
	       prog == PROG_STUB_ALLOC ? skel->progs.stub_alloc :
	       prog == PROG_STUB_FREE ? skel->progs.stub_free : NULL;
}

/* The uprobe programs' bits (1 << PROG_*), from PROG_ALLOC_ENTER to PROG_RESET_ENTER. */
#define TRACER_UPROBE_PROGS (1u << PROG_ALLOC_ENTER | 1u << PROG_ALLOC_RETURN | 1u << PROG_FREE_ENTER | \
			     1u << PROG_RESET_ENTER)

static int load_uprobes(struct tracer *tr, unsigned want);

/* libbpf 1.1 has no uprobe.multi nor uprobe.session section: the attach types by hand. */
static void set_attach_types(struct bpf_object *obj, bool multi)
{
	struct bpf_program *p;

	if (!multi)
		return;
	bpf_object__for_each_program(p, obj)
		if (bpf_program__type(p) == BPF_PROG_TYPE_KPROBE)
			bpf_program__set_expected_attach_type(p, strcmp(bpf_program__name(p), "alloc_session") ?
								 HT_BPF_TRACE_UPROBE_MULTI :
								 HT_BPF_TRACE_UPROBE_SESSION);
}

/* Load obj, with libbpf's phases added to *times. */
static int timed_load(struct tracer_times *times, struct bpf_object_skeleton *s)
{
	double t0 = now_ms();

	memset(&marks, 0, sizeof(marks));
	tracer_vlog_arm(*s->obj);
	int err = bpf_object__load_skeleton(s);
	double t1 = now_ms();
	tracer_vlog_report(*s->obj);
	/* Each mark falls back on the one before it when libbpf did not say it. */
	double btf = marks.btf ? marks.btf : t0, maps = marks.last_map ? marks.last_map : btf;
	double core = marks.last_core > maps ? marks.last_core : maps;
	times->btf_ms += btf - t0;
	times->maps_ms += maps - btf;
	times->core_ms += core - maps;
	times->verify_ms += t1 - core;
	return err;
}

/*
 * Open, configure and load the object with the programs in progs (bits
 * 1 << PROG_*) and process_exec; NULL with -errno in *err.  Programs left
 * out are loaded when first attached (program()): the verifier's time
 * goes to the programs this run attaches.
 */
static struct heaptrace *load(struct tracer *tr, const struct tracer_config *cfg, unsigned progs, int *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = tr->ktypes[0] ? tr->ktypes : NULL);
	struct heaptrace *skel = heaptrace__open_opts(&opts);

	if (!skel) {
		*err = -errno;
		return NULL;
	}
	skel->rodata->target_tgid = cfg->tgid;
	skel->rodata->follow_fork = cfg->follow_fork;
	skel->rodata->multi_links = cfg->multi;
	skel->rodata->page_size = sysconf(_SC_PAGESIZE);
	memcpy((void *)skel->bss->specs, cfg->specs, cfg->n_specs * sizeof(*cfg->specs));

	skel->rodata->max_depth = cfg->max_depth;
	skel->rodata->peak_step = cfg->peak_step;
	skel->rodata->min_frame_addr = mmap_min_addr();
	skel->rodata->stack_mode = cfg->stack_mode;
	skel->rodata->sample_rate = cfg->sample_rate;
	skel->rodata->live_filter_on = cfg->batch;
	/* The live map and its levels are made apart (levels.c); the arena maps need room only for arenas. */
	if (!cfg->arenas) {
		bpf_map__set_max_entries(skel->maps.arenas, 1);
		bpf_map__set_max_entries(skel->maps.arena_sites, 1);
	}
	bpf_map__set_max_entries(skel->maps.arena_blocks, cfg->arenas ? cfg->max_live : 1);
	/* Per process slot: without --follow-fork only the target's. */
	bpf_map__set_max_entries(skel->maps.unwind_procs, cfg->follow_fork ? HT_MAX_PROCS : 1);
	/* Counters per process slot; without --follow-fork only the target's. */
	bpf_map__set_max_entries(skel->maps.counters, (cfg->follow_fork ? HT_MAX_PROCS : 1) * HT_COUNTER_MAX);
	bpf_map__set_max_entries(skel->maps.unwind_rows, cfg->unwind_rows ? cfg->unwind_rows : 1);
	bpf_map__set_max_entries(skel->maps.stacks, cfg->max_stacks);
	/* A stack holds at most max_depth frames: smaller values, less kernel memory per stack. */
	bpf_map__set_value_size(skel->maps.stacks, tracer_stack_size(cfg->max_depth));
	/* One more site than stacks: the pseudo stack of allocations whose stack was lost. */
	bpf_map__set_max_entries(skel->maps.sites, cfg->max_stacks + 1);
	/* The live map tracer_prepare_levels made, its first level going in meanwhile; without it libbpf makes one. */
	int live = tracer_prepared_live(tr);
	if (live >= 0 && bpf_map__reuse_fd(skel->maps.live, live))
		tracer_stop_levels(tr);
	set_attach_types(skel->obj, cfg->multi);
	for (int p = 0; p <= PROG_STUB_FREE; p++)
		if (tracer_main_prog(skel, p))
			bpf_program__set_autoload(tracer_main_prog(skel, p), progs & (1u << p));
	/* The restorers are for heaptrace's own walks: the kernel's (--unwind kernel) stops at a signal frame. */
	bpf_program__set_autoload(skel->progs.signal_deliver, cfg->stack_mode != HT_STACK_KERNEL);
	/* --mmap: its programs, and its ranges' index room (one entry otherwise). */
	bpf_program__set_autoload(skel->progs.map_enter, cfg->maps);
	bpf_program__set_autoload(skel->progs.map_exit, cfg->maps);
	bpf_map__set_max_entries(skel->maps.map_ranges, cfg->maps ? 65536 : 1);
	/* Forks are counted only when they are not followed (untraced_children). */
	bpf_program__set_autoload(skel->progs.process_fork, !cfg->follow_fork);

	*err = timed_load(&tr->times, skel->skeleton);
	if (*err) {
		heaptrace__destroy(skel);
		return NULL;
	}
	return skel;
}

/* An internal map's section (".bss" of "heaptrac.bss"); another map's name. */
static const char *map_key(const struct bpf_map *m)
{
	const char *n = bpf_map__name(m), *dot = strchr(n, '.');

	return dot && n[0] != '.' ? dot : n;
}

static struct bpf_map *map_like(struct bpf_object *obj, const struct bpf_map *m)
{
	struct bpf_map *x;

	bpf_object__for_each_map(x, obj)
		if (!strcmp(map_key(x), map_key(m)))
			return x;
	return NULL;
}

/*
 * Does every global of obj's data sections sit where it does in main's
 * (obj's programs read them in main's maps)?
 */
static bool same_globals(struct bpf_object *main, struct bpf_object *obj)
{
	const struct btf *bm = bpf_object__btf(main), *bo = bpf_object__btf(obj);

	for (__u32 id = 1; bm && bo && id < (__u32)btf__type_cnt(bo); id++) {
		const struct btf_type *t = btf__type_by_id(bo, id);
		const char *sec = btf__name_by_offset(bo, t->name_off);
		if (!btf_is_datasec(t) || (strncmp(sec, ".bss", 4) && strncmp(sec, ".data", 5) && strncmp(sec, ".rodata", 7)))
			continue;
		__s32 other = btf__find_by_name_kind(bm, sec, BTF_KIND_DATASEC);
		if (other < 0)
			return false;
		const struct btf_type *u = btf__type_by_id(bm, other);
		const struct btf_var_secinfo *v = btf_var_secinfos(t);
		for (int i = 0; i < btf_vlen(t); i++, v++) {
			const char *name = btf__name_by_offset(bo, btf__type_by_id(bo, v->type)->name_off);
			const struct btf_var_secinfo *w = btf_var_secinfos(u);
			int k = 0;
			for (; k < btf_vlen(u); k++, w++)
				if (!strcmp(name, btf__name_by_offset(bm, btf__type_by_id(bm, w->type)->name_off)))
					break;
			if (k == btf_vlen(u) || w->offset != v->offset || w->size != v->size) {
				ht_info("BPF objects: %s of %s is not where the main object has it", name, sec);
				return false;
			}
		}
	}
	return bm && bo;
}

bool tracer_shares_map(const struct tracer *tr, const struct bpf_map *m)
{
	return map_like(tr->skel->obj, m) != NULL;
}

int tracer_share_maps(struct tracer *tr, struct bpf_object *obj)
{
	struct bpf_map *m;

	if (!same_globals(tr->skel->obj, obj)) {
		ht_err("BPF objects built apart: their globals differ; cannot load %s", bpf_object__name(obj));
		return -EINVAL;
	}
	/* A map the main object does not have is the object's own (drain.bpf.c's ring_stacks). */
	bpf_object__for_each_map(m, obj) {
		struct bpf_map *mine = map_like(tr->skel->obj, m);
		int err = mine ? bpf_map__reuse_fd(m, bpf_map__fd(mine)) : 0;
		if (err)
			return err;
	}
	return 0;
}

/*
 * Load the program named want (and the uprobe programs of the list the
 * first load left out) into an object that has the main object's maps, by
 * fd: the programs it loads count and record into the same maps.
 */
int tracer_load_into(struct tracer *tr, struct bpf_object *obj, struct bpf_object_skeleton *s, const char *want,
		     const char *const *also, struct tracer_times *times)
{
	struct bpf_program *p;
	int err = tracer_share_maps(tr, obj);

	if (err)
		return err;
	set_attach_types(obj, tr->multi);
	bpf_object__for_each_program(p, obj) {
		bool load = !strcmp(bpf_program__name(p), want);
		for (int i = 0; also && also[i]; i++)
			load |= !strcmp(bpf_program__name(p), also[i]);
		bpf_program__set_autoload(p, load);
	}
	return timed_load(times, s);
}

int tracer_load(struct tracer *tr, const struct tracer_config *cfg)
{
	bool session = cfg->session && cfg->multi;
	unsigned progs = cfg->progs;
	struct heaptrace *skel;
	int err;

	memset(tr, 0, sizeof(*tr));
	libbpf_set_print(libbpf_log);
	double t0 = now_ms();
	/* With sessions the allocators' entry and return are one program, of the session object. */
	if (session)
		progs &= ~(1u << PROG_ALLOC_ENTER | 1u << PROG_ALLOC_RETURN);
	/* The uprobe programs come from an object of their own (load_uprobes), once the main one is in. */
	unsigned uprobes = progs & TRACER_UPROBE_PROGS;
	progs &= ~uprobes;
	bool built;
	double t1 = now_ms();
	if (ktypes_path(tr->ktypes, sizeof(tr->ktypes), &built, &tr->ktypes_fd))
		tr->ktypes[0] = '\0';
	tr->times.ktypes_ms = now_ms() - t1;
	tracer_prepare_levels(tr, cfg->max_live);
	/* The stub's programs side by side, apart (apart.c); in the main object if that fails. */
	unsigned apart = tracer_apart_worth(progs) ? 1u << PROG_STUB_ALLOC | 1u << PROG_STUB_FREE : 0;
	skel = load(tr, cfg, progs & ~apart, &err);
	if (skel && apart) {
		tr->skel = skel;
		tr->multi = cfg->multi;
		/* Its verification beside theirs: the maps are there now. */
		if (cfg->batch)
			drain_preload(tr);
		if ((err = tracer_load_apart(tr))) {
			ht_info("cannot load the stub's programs apart (%s): in the main object", strerror(-err));
			/* The drain's maps were that object's. */
			drain_close(tr);
			heaptrace__destroy(skel);
			skel = tr->skel = load(tr, cfg, progs, &err);
		}
	}
	if (!skel && tr->ktypes[0]) {
		/* A kernel read the cut-down types do not cover (ktypes.c): the whole BTF, as libbpf reads it. */
		ht_info("cannot load the BPF object with the kernel types of %s (%s): with the kernel's whole BTF",
			tr->ktypes, strerror(-err));
		close(tr->ktypes_fd);
		ktypes_forget();
		tr->ktypes[0] = '\0';
		skel = load(tr, cfg, progs, &err);
	}
	if (!skel) {
		tracer_stop_levels(tr);
		explain_load_error(err);
		return -1;
	}
	tr->skel = skel;
	tr->multi = cfg->multi;
	tr->session = session;
	if (load_uprobes(tr, uprobes)) {
		tracer_close(tr);
		return -1;
	}
	if (cfg->batch && !tr->drain)
		drain_preload(tr);
	tr->sample_rate = cfg->sample_rate;
	tr->n_slots = 1;
	/* Every map is empty now: what each costs with nothing in it. */
	struct bpf_map *m;
	int n_maps = 0;
	bpf_object__for_each_map(m, skel->obj)
		n_maps++;
	if ((tr->base_memlock = calloc(n_maps, sizeof(*tr->base_memlock)))) {
		n_maps = 0;
		bpf_object__for_each_map(m, skel->obj)
			tr->base_memlock[n_maps++] = tracer_memlock_of(bpf_map__fd(m));
	}
	if (tracer_start_levels(tr, cfg->max_live)) {
		tracer_close(tr);
		return -1;
	}
	/* Sessions for allocators that need uprobes now: the kernel may not have them. */
	if (session && (cfg->progs & (1u << PROG_ALLOC_ENTER)))
		tracer_sessions(tr);
	tr->exec_link = bpf_program__attach(skel->progs.process_exec);
	if (!tr->exec_link)
		ht_info("cannot watch execve (%s): blocks of a replaced program would stay in use",
			strerror(errno));
	/* Without --follow-fork: the children the target forks, to say that they ran untraced. */
	if (!cfg->follow_fork && !(tr->fork_link = bpf_program__attach(skel->progs.process_fork)))
		ht_info("cannot watch forks (%s): untraced children are not counted", strerror(errno));
	tr->exit_link = bpf_program__attach(skel->progs.thread_exit);
	if (tr->exit_link)
		skel->bss->thread_exits_seen = 1;
	else
		ht_info("cannot watch thread exits (%s): glibc's thread cache frees count as unmatched_frees",
			strerror(errno));
	/*
	 * Without it an OOM kill is still seen, by its SIGKILL and the cgroup's
	 * events (session/oom.c).  HEAPTRACE_TEST_NO_OOM_TRACEPOINT=1 (for
	 * heaptrace's own tests: tests/scenarios/oom.sh, and so named in the
	 * man page) leaves it out, so that the fallback runs where the
	 * tracepoint would always attach.
	 */
	const char *no_oom = getenv("HEAPTRACE_TEST_NO_OOM_TRACEPOINT");
	if (no_oom && !strcmp(no_oom, "1"))
		ht_info("HEAPTRACE_TEST_NO_OOM_TRACEPOINT: the OOM killer is watched through the cgroup's events only");
	else if (!(tr->oom_link = bpf_program__attach(skel->progs.oom_victim)))
		ht_info("cannot watch the OOM killer (%s)", strerror(errno));
	if (cfg->maps && tracer_attach_maps(tr)) {
		tracer_close(tr);
		return -1;
	}
	if (bpf_program__autoload(skel->progs.signal_deliver))
		tr->signal_link = bpf_program__attach(skel->progs.signal_deliver);
	if (bpf_program__autoload(skel->progs.signal_deliver) && !tr->signal_link)
		ht_info("cannot watch signal delivery (%s): frame-pointer stacks end at signal frames",
			strerror(errno));
	tr->times.load_ms = now_ms() - t0;
	return 0;
}

bool tracer_sessions(struct tracer *tr)
{
	if (!tr->session || tr->sess)
		return tr->session;
	double t0 = now_ms();
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = tr->ktypes[0] ? tr->ktypes : NULL);
	struct alloc_session *s = alloc_session__open_opts(&opts);
	int err = s ? tracer_load_into(tr, s->obj, s->skeleton, "alloc_session", NULL, &tr->times) : -errno;
	if (err) {
		/* A kernel before 6.13 (no bpf_session_is_return, no session attach type). */
		ht_info("cannot load the uprobe session program (%s): plain return probes", strerror(-err));
		alloc_session__destroy(s);
		tr->session = false;
		return false;
	}
	tr->sess = s;
	ht_info("loaded the uprobe session program in %.1f ms", now_ms() - t0);
	return true;
}

/* prog as loaded, in the main instance or another; NULL: in none yet. */
static struct bpf_program *loaded(const struct tracer *tr, enum tracer_prog prog)
{
	for (int i = -1; i < tr->n_more; i++) {
		struct bpf_program *p = tracer_main_prog(i < 0 ? tr->skel : tr->more[i], prog);
		if (p && bpf_program__fd(p) >= 0)
			return p;
	}
	return NULL;
}

/*
 * The uprobe programs of want (1 << PROG_*) that no instance has, together:
 * into instances of the uprobe programs' object (uprobe_obj.c), with the
 * main object's maps, alloc_return (by far the largest) beside the others
 * where two CPUs may run (apart.c); of the main object if that one cannot
 * be loaded.  0, or -errno (said).
 */
static int load_uprobes(struct tracer *tr, unsigned want)
{
	const char *left[5] = { NULL };
	char list[128] = "";
	int n = 0, err = 0;

	for (int k = PROG_ALLOC_ENTER; k <= PROG_RESET_ENTER; k++)
		if ((want & 1u << k) && !loaded(tr, k)) {
			left[n] = bpf_program__name(tracer_main_prog(tr->skel, k));
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", n ? ", " : "", left[n]);
			n++;
		}
	if (!n)
		return 0;
	double t0 = now_ms();
	for (int inlined = 1; inlined >= 0; inlined--) {
		struct tracer_part parts[2] = { { .inlined = inlined }, { .inlined = inlined } };
		bool apart = inlined && n > 1 && tracer_two_cpus();
		int np = 1, m = 0;
		/* With another program beside it, parts[0] is never empty. */
		for (int k = 0; k < n; k++) {
			if (apart && !strcmp(left[k], "alloc_return")) {
				parts[1].names[0] = left[k];
				np = 2;
			} else {
				parts[0].names[m++] = left[k];
			}
		}
		if (!(err = tracer_load_parts(tr, parts, np))) {
			ht_info("loaded %s in %.1f ms (%s)", list, now_ms() - t0,
				inlined ? "the uprobe programs' object" : "an instance of the main object");
			return 0;
		}
		if (inlined)
			ht_info("cannot load the uprobe programs' object (%s): the main object's programs", strerror(-err));
	}
	ht_err("cannot load the BPF program %s: %s", left[0], strerror(-err));
	return err;
}

/*
 * A program, loaded if not yet: an uprobe program with the other uprobe
 * programs not loaded yet (a fallback to uprobes wants them together),
 * another into an instance of the main object of its own.  NULL if it
 * cannot be loaded (said).
 */
static struct bpf_program *program(struct tracer *tr, enum tracer_prog prog)
{
	if (prog == PROG_ALLOC_SESSION)
		return tracer_sessions(tr) ? tr->sess->progs.alloc_session : NULL;
	struct bpf_program *p = loaded(tr, prog);
	if (p)
		return p;
	if (TRACER_UPROBE_PROGS & 1u << prog) {
		if (load_uprobes(tr, TRACER_UPROBE_PROGS))
			return NULL;
	} else {
		const char *name = bpf_program__name(tracer_main_prog(tr->skel, prog));
		struct tracer_part part = { .names = { name } };
		double t0 = now_ms();
		int err = tracer_load_parts(tr, &part, 1);
		if (err) {
			ht_err("cannot load the BPF program %s: %s", name, strerror(-err));
			return NULL;
		}
		ht_info("loaded %s in %.1f ms (an instance of the main object)", name, now_ms() - t0);
	}
	return loaded(tr, prog);
}

int tracer_attach_multi(struct tracer *tr, enum tracer_prog prog, const char *path,
			const uint64_t *offsets, const uint64_t *cookies, uint32_t n, pid_t pid)
{
	struct bpf_program *p = program(tr, prog);
	if (!p)
		return prog == PROG_ALLOC_SESSION ? -EPROTONOSUPPORT : -ENOENT;
	int prog_fd = bpf_program__fd(p);
	int fd = prog == PROG_ALLOC_SESSION ? uprobe_session_attach(prog_fd, path, offsets, cookies, n, pid) :
		 uprobe_multi_attach(prog_fd, path, offsets, cookies, n, prog == PROG_ALLOC_RETURN, pid);

	/* The first link of a type tells whether the kernel knows the type at all. */
	if (fd == -EINVAL || fd == -EOPNOTSUPP) {
		if (prog == PROG_ALLOC_SESSION && !tr->n_session)
			return -EPROTONOSUPPORT;
		if (!tr->n_multi)
			return -EOPNOTSUPP;
	}
	if (fd < 0)
		return fd;
	tr->n_session += prog == PROG_ALLOC_SESSION;
	if (ARRAY_RESERVE(tr->multi_links, tr->multi_cap, (size_t)tr->n_multi + 1, 16)) {
		close(fd);
		return -ENOMEM;
	}
	tr->multi_links[tr->n_multi++] = (struct tracer_multi){ .fd = fd, .pid = pid };
	return 0;
}

void tracer_forget_pid(struct tracer *tr, pid_t pid)
{
	__u32 tgid = pid;

	drain_now(tr);

	for (int i = 0; i < tr->n_multi; i++)
		if (tr->multi_links[i].pid == pid && tr->multi_links[i].fd >= 0) {
			close(tr->multi_links[i].fd);
			tr->multi_links[i].fd = -1;
		}
	/* Its entries go too: a pid used again is another process (its slot's stacks and totals stay). */
	bpf_map_delete_elem(bpf_map__fd(tr->skel->maps.procs), &tgid);
	bpf_map_delete_elem(bpf_map__fd(tr->skel->maps.stub_procs), &tgid);
}

int tracer_attach(struct tracer *tr, enum tracer_prog prog, const char *path, uint64_t offset,
		  uint32_t cookie, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = prog == PROG_ALLOC_RETURN);
	struct bpf_program *p = program(tr, prog);
	if (!p)
		return -ENOENT;
	struct bpf_link *l = bpf_program__attach_uprobe_opts(p, pid, path, offset, &opts);

	if (!l)
		return -errno;
	if (ARRAY_RESERVE(tr->links, tr->links_cap, (size_t)tr->n_links + 1, 16)) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	tr->links[tr->n_links++] = l;
	return 0;
}

/* What one closing thread takes: every step-th link from its first. */
struct closer {
	struct tracer *tr;
	int first, step;
	pthread_t thread;
};

static void *close_links(void *arg)
{
	const struct closer *c = arg;
	struct tracer *tr = c->tr;

	for (int i = c->first; i < tr->n_multi + tr->n_links; i += c->step) {
		if (i < tr->n_multi) {
			if (tr->multi_links[i].fd >= 0)
				close(tr->multi_links[i].fd);
		} else {
			bpf_link__destroy(tr->links[i - tr->n_multi]);
		}
	}
	return NULL;
}

void tracer_detach(struct tracer *tr)
{
	enum { CLOSERS = 16 };
	struct closer c[CLOSERS];
	int n = tr->n_multi + tr->n_links, started = 0;

	/*
	 * The programs ignore every event from now on, so the links may close
	 * in any order, and at once: each close waits for a grace period of
	 * its own (uprobe unregistration, ~40 ms each), which threads closing
	 * side by side wait together.  Where a thread cannot start, this one
	 * closes its share.
	 */
	/* Events the rings hold happened before the stop. */
	drain_now(tr);
	if (tr->skel && tr->skel->bss)
		tr->skel->bss->tracing_stopped = 1;
	int step = n < CLOSERS ? n : CLOSERS;
	for (int k = 0; k < step; k++) {
		c[k] = (struct closer){ .tr = tr, .first = k, .step = step };
		if (k && !pthread_create(&c[k].thread, NULL, close_links, &c[k]))
			started |= 1 << k;
	}
	if (step)
		close_links(&c[0]);
	for (int k = 1; k < step; k++) {
		if (started & 1 << k)
			pthread_join(c[k].thread, NULL);
		else
			close_links(&c[k]);
	}
	free(tr->multi_links);
	tr->multi_links = NULL;
	tr->multi_cap = 0;
	tr->n_multi = 0;
	tr->n_session = 0;
	free(tr->links);
	tr->links = NULL;
	tr->links_cap = 0;
	tr->n_links = 0;
}

void tracer_close(struct tracer *tr)
{
	tracer_detach(tr);
	drain_close(tr);
	tracer_stop_levels(tr);
	free(tr->base_memlock);
	tr->base_memlock = NULL;
	bpf_link__destroy(tr->exec_link);
	tr->exec_link = NULL;
	bpf_link__destroy(tr->exit_link);
	tr->exit_link = NULL;
	bpf_link__destroy(tr->signal_link);
	tr->signal_link = NULL;
	bpf_link__destroy(tr->oom_link);
	tr->oom_link = NULL;
	tracer_detach_maps(tr);
	bpf_link__destroy(tr->fork_link);
	tr->fork_link = NULL;
	if (tr->ktypes[0])
		close(tr->ktypes_fd);
	tr->ktypes[0] = '\0';
	for (int i = 0; i < tr->n_more; i++)
		heaptrace__destroy(tr->more[i]);
	tr->n_more = 0;
	alloc_session__destroy(tr->sess);
	tr->sess = NULL;
	if (tr->skel)
		heaptrace__destroy(tr->skel);
	tr->skel = NULL;
}

/* Add the counters of slots [from, to) to out. */
static void add_counters(const struct tracer *tr, uint32_t from, uint32_t to, uint64_t out[HT_COUNTER_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals = calloc(ncpu > 0 ? ncpu : 1, sizeof(*vals));
	int fd = bpf_map__fd(tr->skel->maps.counters);

	for (uint32_t slot = from; vals && slot < to; slot++)
		for (uint32_t c = 0; c < HT_COUNTER_MAX; c++) {
			uint32_t k = slot * HT_COUNTER_MAX + c;
			if (!bpf_map_lookup_elem(fd, &k, vals))
				for (int i = 0; i < ncpu; i++)
					out[c] += vals[i];
		}
	free(vals);
	drain_counters(tr, from, to, out);
}

void tracer_counters(const struct tracer *tr, uint32_t slot, uint64_t out[HT_COUNTER_MAX])
{
	drain_now(tr);
	memset(out, 0, HT_COUNTER_MAX * sizeof(*out));
	add_counters(tr, slot, slot + 1, out);
}

void tracer_session_counters(const struct tracer *tr, uint64_t out[HT_COUNTER_MAX])
{
	drain_now(tr);
	memset(out, 0, HT_COUNTER_MAX * sizeof(*out));
	/* --http's thread reads it while the ptrace loop adds children. */
	add_counters(tr, 0, __atomic_load_n(&tr->n_slots, __ATOMIC_RELAXED), out);
}

int tracer_sites_fd(const struct tracer *tr)
{
	return bpf_map__fd(tr->skel->maps.sites);
}

int tracer_stacks_fd(const struct tracer *tr)
{
	return bpf_map__fd(tr->skel->maps.stacks);
}

uint32_t tracer_stack_size(uint32_t max_depth)
{
	return offsetof(struct ht_stack, pcs) + max_depth * sizeof(__u64);
}

uint32_t tracer_stack_value_size(const struct tracer *tr)
{
	return bpf_map__value_size(tr->skel->maps.stacks);
}

int tracer_arena_blocks_fd(const struct tracer *tr)
{
	return bpf_map__fd(tr->skel->maps.arena_blocks);
}

int tracer_arenas_fd(const struct tracer *tr)
{
	return bpf_map__fd(tr->skel->maps.arenas);
}

uint32_t tracer_unwind_capacity(const struct tracer *tr)
{
	return bpf_map__max_entries(tr->skel->maps.unwind_rows);
}

uint64_t tracer_min_frame_addr(const struct tracer *tr)
{
	return tr->skel->rodata->min_frame_addr;
}

int tracer_unwind_rows_fd(const struct tracer *tr)
{
	return bpf_map__fd(tr->skel->maps.unwind_rows);
}

int tracer_unwind_objects_fd(const struct tracer *tr)
{
	return bpf_map__fd(tr->skel->maps.unwind_objects);
}

void tracer_unwind_flush(const struct tracer *tr, uint32_t from_slot)
{
	static const struct ht_unwind_proc empty;

	for (uint32_t slot = from_slot; slot < bpf_map__max_entries(tr->skel->maps.unwind_procs); slot++)
		bpf_map_update_elem(bpf_map__fd(tr->skel->maps.unwind_procs), &slot, &empty, BPF_ANY);
}

void tracer_unwind_set(const struct tracer *tr, uint32_t slot, const struct ht_unwind_proc *p)
{
	bpf_map_update_elem(bpf_map__fd(tr->skel->maps.unwind_procs), &slot, p, BPF_ANY);
}

int tracer_add_proc(struct tracer *tr, pid_t pid, uint32_t slot, uint32_t parent)
{
	struct ht_proc p = { .slot = slot, .parent = parent };
	uint32_t tgid = pid;

	if (bpf_map_update_elem(bpf_map__fd(tr->skel->maps.procs), &tgid, &p, BPF_ANY)) {
		ht_err("cannot add PID %d to the traced processes: %s", pid, strerror(errno));
		return -1;
	}
	if (slot >= tr->n_slots)
		__atomic_store_n(&tr->n_slots, slot + 1, __ATOMIC_RELAXED);
	return 0;
}

void tracer_totals(const struct tracer *tr, uint32_t proc, struct ht_totals *t)
{
	drain_now(tr);
	if (bpf_map_lookup_elem(bpf_map__fd(tr->skel->maps.totals), &proc, t))
		memset(t, 0, sizeof(*t));
}

int tracer_set_specs(struct tracer *tr, const struct ht_alloc_spec *specs, int from, int n)
{
	if (from < 0 || from + n > HT_MAX_SPECS || !tr->skel->bss)
		return -1;
	memcpy((void *)&tr->skel->bss->specs[from], &specs[from], n * sizeof(*specs));
	return 0;
}

int tracer_set_stub(struct tracer *tr, pid_t pid, uint64_t active, uint64_t depth)
{
	struct ht_stub_proc p = { .active = active, .depth = depth };
	__u32 key = pid;

	if (tr->skel->bss)
		__atomic_store_n(&tr->skel->bss->stubs_seen, 1, __ATOMIC_RELEASE);
	return bpf_map_update_elem(bpf_map__fd(tr->skel->maps.stub_procs), &key, &p, BPF_ANY) ? -errno : 0;
}

/* Every key of a hash map whose process slot (at proc_off) is slot, deleted. */
static size_t forget_keys(int fd, size_t ksz, size_t proc_off, uint32_t slot)
{
	char *keys = NULL, *g;
	size_t n = 0, cap = 0, gone = 0;
	char key[32], last[32], *prev = NULL;

	/* Keys first, then the deletions: a deleted key would restart get_next_key. */
	while (!bpf_map_get_next_key(fd, prev, key)) {
		uint32_t proc;
		memcpy(&proc, key + proc_off, sizeof(proc));
		if (proc == slot) {
			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				if (!(g = realloc(keys, cap * ksz)))
					break;
				keys = g;
			}
			memcpy(keys + n++ * ksz, key, ksz);
		}
		prev = last;
		memcpy(prev, key, ksz);
	}
	for (size_t i = 0; i < n; i++)
		gone += !bpf_map_delete_elem(fd, keys + i * ksz);
	free(keys);
	return gone;
}

size_t tracer_forget_proc(struct tracer *tr, uint32_t slot)
{
	struct heaptrace *skel = tr->skel;
	int fd = bpf_map__fd(skel->maps.totals);
	struct ht_totals t, fresh = { 0 };
	size_t gone = 0;

	drain_now(tr);  /* the old program's events, before its slot is emptied */
	_Static_assert(sizeof(struct ht_site_key) <= 32 && sizeof(struct ht_arena_site_key) <= 32 &&
		       sizeof(struct ht_arena_key) <= 32, "keys fit forget_keys' buffers");
	if (bpf_map_lookup_elem(fd, &slot, &t))
		return 0;
	/* Nothing was ever in use: nothing was recorded (saves reading every key in a busy tree). */
	if (t.peak_bytes || t.inuse_objects) {
		gone = forget_keys(bpf_map__fd(skel->maps.sites), sizeof(struct ht_site_key),
				   offsetof(struct ht_site_key, proc), slot);
		forget_keys(bpf_map__fd(skel->maps.arena_sites), sizeof(struct ht_arena_site_key),
			    offsetof(struct ht_arena_site_key, proc), slot);
		forget_keys(bpf_map__fd(skel->maps.arenas), sizeof(struct ht_arena_key),
			    offsetof(struct ht_arena_key, proc), slot);
	}
	/* A new program, a new peak; its execs stay counted. */
	fresh.execs = t.execs;
	fresh.exec_dropped = t.exec_dropped;
	bpf_map_update_elem(fd, &slot, &fresh, BPF_ANY);
	return gone;
}
