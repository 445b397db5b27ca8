#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracer/tracer.h"  /* before the skeleton: it names our shared structs */
#include "heaptrace.skel.h"
#include "util/log.h"
#include "probe/uprobe_multi.h"

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's own chatter is for -v; heaptrace reports failures in one line itself. */
	if (!ht_verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void explain_load_error(int err)
{
	if (err == -EPERM || (err == -EACCES && geteuid() != 0))
		ht_err("not permitted to load BPF programs: run as root, or grant CAP_BPF, CAP_PERFMON "
		       "and CAP_SYS_RESOURCE (and CAP_SYS_PTRACE for -p on another user's process)");
	else if (err == -ENOMEM || err == -E2BIG)
		ht_err("cannot create BPF maps (%s): lower --max-allocs or --max-stacks", strerror(-err));
	else
		ht_err("cannot load BPF programs: %s (kernel with BTF and uprobes needed; -v says more)",
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

/* Open, configure and load the object; NULL with -errno in *err. */
static struct heaptrace *load(const struct tracer_config *cfg, bool session, int *err)
{
	struct heaptrace *skel = heaptrace__open();

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
	bpf_map__set_max_entries(skel->maps.live, cfg->max_live);
	/* Counters per process slot; without --follow-fork only the target's. */
	bpf_map__set_max_entries(skel->maps.counters, (cfg->follow_fork ? HT_MAX_PROCS : 1) * HT_COUNTER_MAX);
	bpf_map__set_max_entries(skel->maps.unwind_rows, cfg->unwind_rows ? cfg->unwind_rows : 1);
	bpf_map__set_max_entries(skel->maps.stacks, cfg->max_stacks);
	/* A stack holds at most max_depth frames: smaller values, less kernel memory per stack. */
	bpf_map__set_value_size(skel->maps.stacks, tracer_stack_size(cfg->max_depth));
	/* One more site than stacks: the pseudo stack of allocations whose stack was lost. */
	bpf_map__set_max_entries(skel->maps.sites, cfg->max_stacks + 1);
	if (cfg->multi) {
		/* libbpf 1.1 has no uprobe.multi nor uprobe.session section: set the attach type by hand. */
		bpf_program__set_expected_attach_type(skel->progs.alloc_enter, HT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.alloc_return, HT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.free_enter, HT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.reset_enter, HT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.alloc_session, HT_BPF_TRACE_UPROBE_SESSION);
		bpf_program__set_expected_attach_type(skel->progs.stub_alloc, HT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.stub_free, HT_BPF_TRACE_UPROBE_MULTI);
	}
	/* Only the allocator programs that will be attached are verified. */
	bpf_program__set_autoload(skel->progs.alloc_session, session);
	bpf_program__set_autoload(skel->progs.alloc_enter, !session);
	bpf_program__set_autoload(skel->progs.alloc_return, !session);
	bpf_program__set_autoload(skel->progs.stub_alloc, cfg->stub);
	bpf_program__set_autoload(skel->progs.stub_free, cfg->stub);

	*err = heaptrace__load(skel);
	if (*err) {
		heaptrace__destroy(skel);
		return NULL;
	}
	return skel;
}

int tracer_load(struct tracer *tr, const struct tracer_config *cfg)
{
	bool session = cfg->session && cfg->multi;
	struct heaptrace *skel;
	int err;

	memset(tr, 0, sizeof(*tr));
	libbpf_set_print(libbpf_log);
	skel = load(cfg, session, &err);
	if (!skel && session) {
		/* A kernel before 6.13 (no bpf_session_is_return, no session attach type). */
		ht_info("cannot load the uprobe session program (%s): plain return probes", strerror(-err));
		session = false;
		skel = load(cfg, session, &err);
	}
	if (!skel) {
		explain_load_error(err);
		return -1;
	}
	tr->skel = skel;
	tr->multi = cfg->multi;
	tr->session = session;
	tr->sample_rate = cfg->sample_rate;
	tr->n_slots = 1;
	tr->exec_link = bpf_program__attach(skel->progs.process_exec);
	if (!tr->exec_link)
		ht_info("cannot watch execve (%s): blocks of a replaced program would stay in use",
			strerror(errno));
	tr->signal_link = bpf_program__attach(skel->progs.signal_deliver);
	if (!tr->signal_link)
		ht_info("cannot watch signal delivery (%s): frame-pointer stacks end at signal frames",
			strerror(errno));
	return 0;
}

static struct bpf_program *program(struct tracer *tr, enum tracer_prog prog)
{
	return prog == PROG_ALLOC_ENTER ? tr->skel->progs.alloc_enter :
	       prog == PROG_ALLOC_RETURN ? tr->skel->progs.alloc_return :
	       prog == PROG_ALLOC_SESSION ? tr->skel->progs.alloc_session :
	       prog == PROG_FREE_ENTER ? tr->skel->progs.free_enter :
	       prog == PROG_STUB_ALLOC ? tr->skel->progs.stub_alloc :
	       prog == PROG_STUB_FREE ? tr->skel->progs.stub_free :
					 tr->skel->progs.reset_enter;
}

int tracer_attach_multi(struct tracer *tr, enum tracer_prog prog, const char *path,
			const uint64_t *offsets, const uint64_t *cookies, uint32_t n, pid_t pid)
{
	int prog_fd = bpf_program__fd(program(tr, prog));
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
	int *g = realloc(tr->multi_fds, (tr->n_multi + 1) * sizeof(*g));
	if (!g) {
		close(fd);
		return -ENOMEM;
	}
	tr->multi_fds = g;
	tr->multi_fds[tr->n_multi++] = fd;
	return 0;
}

int tracer_attach(struct tracer *tr, enum tracer_prog prog, const char *path, uint64_t offset,
		  uint32_t cookie, pid_t pid)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = prog == PROG_ALLOC_RETURN);
	struct bpf_link *l = bpf_program__attach_uprobe_opts(program(tr, prog), pid, path, offset, &opts);

	if (!l)
		return -errno;
	struct bpf_link **n = realloc(tr->links, (tr->n_links + 1) * sizeof(*n));
	if (!n) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	tr->links = n;
	tr->links[tr->n_links++] = l;
	return 0;
}

void tracer_detach(struct tracer *tr)
{
	/*
	 * The programs ignore every event from now on: closing the links
	 * takes a grace period each, while the target runs on.  They close
	 * in the reverse order of attaching (user/probes.c) all the same.
	 */
	if (tr->skel && tr->skel->bss)
		tr->skel->bss->tracing_stopped = 1;
	for (int i = tr->n_multi; i-- > 0;)
		close(tr->multi_fds[i]);
	free(tr->multi_fds);
	tr->multi_fds = NULL;
	tr->n_multi = 0;
	tr->n_session = 0;
	for (int i = tr->n_links; i-- > 0;)
		bpf_link__destroy(tr->links[i]);
	free(tr->links);
	tr->links = NULL;
	tr->n_links = 0;
}

void tracer_close(struct tracer *tr)
{
	tracer_detach(tr);
	bpf_link__destroy(tr->exec_link);
	tr->exec_link = NULL;
	bpf_link__destroy(tr->signal_link);
	tr->signal_link = NULL;
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
}

void tracer_counters(const struct tracer *tr, uint32_t slot, uint64_t out[HT_COUNTER_MAX])
{
	memset(out, 0, HT_COUNTER_MAX * sizeof(*out));
	add_counters(tr, slot, slot + 1, out);
}

void tracer_session_counters(const struct tracer *tr, uint64_t out[HT_COUNTER_MAX])
{
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

static uint64_t memlock_of(int fd)
{
	char path[64], line[256];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lu", &v) == 1)
			break;
	fclose(f);
	return v;
}

uint64_t tracer_map_memory(const struct tracer *tr, uint64_t *live_bytes, uint32_t *live_entries)
{
	struct bpf_map *m;
	uint64_t total = 0;

	bpf_object__for_each_map(m, tr->skel->obj)
		total += memlock_of(bpf_map__fd(m));
	*live_bytes = memlock_of(bpf_map__fd(tr->skel->maps.live));
	*live_entries = bpf_map__max_entries(tr->skel->maps.live);
	return total;
}

uint32_t tracer_stack_size(uint32_t max_depth)
{
	return offsetof(struct ht_stack, pcs) + max_depth * sizeof(__u64);
}

uint32_t tracer_stack_value_size(const struct tracer *tr)
{
	return bpf_map__value_size(tr->skel->maps.stacks);
}

uint32_t tracer_max_stacks(const struct tracer *tr)
{
	return bpf_map__max_entries(tr->skel->maps.stacks);
}

int tracer_live_fd(const struct tracer *tr)
{
	return bpf_map__fd(tr->skel->maps.live);
}

int tracer_arenas_fd(const struct tracer *tr)
{
	return bpf_map__fd(tr->skel->maps.arenas);
}

uint32_t tracer_unwind_capacity(const struct tracer *tr)
{
	return bpf_map__max_entries(tr->skel->maps.unwind_rows);
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

	for (uint32_t slot = from_slot; slot < HT_MAX_PROCS; slot++)
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
