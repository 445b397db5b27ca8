/*
 * The BPF object: opened, sized from the options and loaded (with the
 * programs of other objects beside it: apart.c, programs.c), closed; and
 * what the other stages read and write in its maps.  Its helpers get the
 * struct tracer passed in (tracer/state.h) and never call back here.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracer/tracer.h"  /* before the skeletons: they name our shared structs */
#include "heaptrace.skel.h"
#include "alloc_session.skel.h"
#include "util/log.h"
#include "util/time.h"
#include "tracer/ktypes.h"
#include "tracer/internal.h"
#include "tracer/drain.h"

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
	tracer_set_attach_types(skel->obj, cfg->multi);
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
	/* A launched or followed program waits for its stub at its loader (session.c's arm_loader(), procstub_arm). */
	bpf_program__set_autoload(skel->progs.loader_state, cfg->stub);

	*err = tracer_timed_load(&tr->times, skel->skeleton);
	if (*err) {
		heaptrace__destroy(skel);
		return NULL;
	}
	return skel;
}

int tracer_load(struct tracer *tr, const struct tracer_config *cfg)
{
	bool session = cfg->session && cfg->multi;
	unsigned progs = cfg->progs;
	struct heaptrace *skel;
	int err;

	memset(tr, 0, sizeof(*tr));
	tracer_phases_hook();
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
	tracer_prepare_levels(tr, cfg->max_live, cfg->batch);
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
	if (tracer_load_uprobes(tr, uprobes)) {
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

void tracer_drain(const struct tracer *tr)
{
	drain_now(tr);
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

void tracer_volume_stop(struct tracer *tr, uint64_t bytes)
{
	__atomic_store_n(&tr->volume_stop, bytes, __ATOMIC_RELEASE);
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
