/*
 * Installing and removing the fast path.  The order is what keeps the
 * target correct: the stub is mapped and its record sites carry their
 * uprobes before any function jumps to it, and it starts disabled (every
 * call goes straight to the original) until all is in place; at the end it
 * is disabled before the bytes are put back.  Every write happens with all
 * threads stopped and no thread's instruction pointer inside the bytes
 * being replaced.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "inject/inject.h"
#include "inject/fast.h"
#include "inject/image.h"
#include "inject/jumps.h"
#include "inject/pytables.h"
#include "inject/phase.h"
#include "inject/place.h"
#include "probe/plan.h"
#include "probe/pyframes.h"
#include "tracer/tracer.h"
#include "insn/relocate.h"
#include "inject/spec_stub.h"
#include "inject/ring.h"
#include "inject/share.h"
#include "stub_blob.h"
#include "util/elfobj.h"
#include "util/log.h"
#include "util/procfs.h"

/*
 * Where remote system calls run once the stub is mapped (remote.h): the
 * file's last page, alone, so that the gadget's writes (through
 * /proc/PID/mem, a private copy of the page) never touch a page that other
 * threads execute.
 */
_Static_assert(STUB_CFG_OFF + sizeof(struct stub_cfg) <= STUB_GADGET_OFF, "the config overlaps the gadget's page");

int inject_plan_more(struct inject *in, struct probe_plan *plan, int from)
{
	int n = in->n;

	/*
	 * Every object's functions, the allocator's first: one stub serves
	 * them all if it can be placed within a rel32 jump of each (install's
	 * reach()).  libc's family beside a jemalloc the program links is
	 * near it (libraries are mapped together); the executable's --sym
	 * functions usually are not.  A function left to uprobes would turn
	 * batching off for the whole process (ring.c's why_not()).
	 */
	for (int k = from; k < plan->n; k++) {
		struct probe *p = &plan->probes[k];

		if (!p->stub_len) {
			ht_info("fast path: %s keeps its uprobes: %s", p->func, p->stub_why);
			continue;
		}
		if (in->n == STUB_MAX_FNS) {
			ht_info("fast path: %s keeps its uprobes: the stub serves %d functions at most", p->func, STUB_MAX_FNS);
			continue;
		}
		p->stub = true;
		in->fns[in->n++] = (struct inject_fn){ .probe = k, .len = p->stub_len, .skip = p->stub_skip };
	}
	return in->n - n;
}

int inject_plan(struct inject *in, struct probe_plan *plan, pid_t pid, uint64_t sample_rate, uint32_t max_live)
{
	memset(in, 0, sizeof(*in));
	in->pid = pid;
	in->file_fd = -1;
	in->share_fd = -1;
	in->sample_rate = sample_rate;
	in->max_live = max_live;
	return inject_plan_more(in, plan, 0);
}

/*
 * The file's bytes back where the jump was, only there: a breakpoint that
 * another tool put on the entry meanwhile stays its own.
 */
static int restore_fn(struct remote *r, const struct inject_fn *f)
{
	return remote_write(r, f->addr + f->skip, f->saved + f->skip, f->len - f->skip);
}

/* Every function the stub was given goes back to its uprobes. */
static void give_back(struct inject *in, struct probe_plan *plan)
{
	if (in->whole)
		return;         /* the target's plan: this process gets uprobes of its own instead */
	for (int i = 0; i < in->n; i++)
		if (!in->fns[i].patched && plan->probes[in->fns[i].probe].stub) {
			plan->probes[in->fns[i].probe].stub = false;
			plan->probes[in->fns[i].probe].given_back = true;
		}
}

/*
 * A stub that could not be completed (a seccomp filter refused memfd_create,
 * say) is unmapped: the process keeps nothing of it.  The call is made
 * from the process's own code with a signal frame under it, not from the
 * gadget that goes with the mapping.  Returns -1 (map_stub's failure).
 */
static int unmap_stub(struct inject *in, struct remote *r, uint64_t len)
{
	int err;

	r->gadget = 0;
	remote_call(r, SYS_munmap, in->base, len, 0, 0, 0, 0, &err);
	inject_phase("unmapped");
	if (!err)
		in->base = 0;
	return -1;
}

/* The stub's file in the target (a memfd of its own, closed after mapping) and its data. */
static int map_stub(struct inject *in, struct remote *r, uint8_t *img, char *why, size_t len)
{
	static const char name[16] = "heaptrace-stub";
	char path[64];
	int err;

	/*
	 * First, where the stub goes, an anonymous mapping holding only the
	 * gadget the other calls run from (remote.h): this one call is the
	 * only one made from the process's own code, with borrowed registers
	 * that a SIGKILL of heaptrace would leave to the thread.
	 */
	long at = remote_call(r, SYS_mmap, in->base, STUB_FILE_SIZE, PROT_READ | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0, &err);
	inject_phase("reserved");
	if (err || (uint64_t)at != in->base) {
		snprintf(why, len, "mmap in the target: %s", err ? strerror(-err) : "elsewhere");
		return -1;
	}
	r->gadget = in->base + STUB_GADGET_OFF;
	/*
	 * memfd_create's name, in the reservation beside the gadget: not on
	 * the thread's stack, where a SIGKILL of heaptrace during the call
	 * would leave it over the thread's own data.
	 */
	uint64_t name_at = in->base + STUB_GADGET_OFF + REMOTE_GADGET_SIZE;
	_Static_assert(REMOTE_GADGET_SIZE + sizeof(name) <= STUB_FILE_SIZE - STUB_GADGET_OFF, "the name does not fit beside the gadget");
	if ((err = remote_write(r, name_at, name, sizeof(name)))) {
		snprintf(why, len, "cannot write the target's memory: %s", strerror(-err));
		return -1;
	}
	long fd = remote_call(r, SYS_memfd_create, (long)name_at, MFD_CLOEXEC, 0, 0, 0, 0, &err);
	inject_phase("memfd");
	if (err) {
		snprintf(why, len, "memfd_create in the target: %s", strerror(-err));
		return unmap_stub(in, r, STUB_FILE_SIZE);
	}
	/* The file replaces the gadget's mapping under the thread that maps it: it has the same gadget. */
	remote_fill_gadget(r, img + STUB_GADGET_OFF);
	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", in->pid, fd);
	in->file_fd = open(path, O_RDWR | O_CLOEXEC);
	bool ok = in->file_fd >= 0 && pwrite(in->file_fd, img, STUB_FILE_SIZE, 0) == STUB_FILE_SIZE;
	if (!ok)
		snprintf(why, len, "cannot write the stub's file %s: %s", path, strerror(errno));
	inject_phase("written");
	at = ok ? remote_call(r, SYS_mmap, in->base, STUB_FILE_SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED, fd, 0,
		       &err) : 0;
	if (ok && (err || (uint64_t)at != in->base)) {
		snprintf(why, len, "mmap of the stub in the target: %s", err ? strerror(-err) : "elsewhere");
		ok = false;
	}
	inject_phase("mapped");
	remote_call(r, SYS_close, fd, 0, 0, 0, 0, 0, &err);
	inject_phase("closed");
	if (!ok)
		return unmap_stub(in, r, STUB_FILE_SIZE);
	at = remote_call(r, SYS_mmap, in->base + STUB_DATA_OFF, in->data_size, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0, &err);
	if (err || (uint64_t)at != in->base + STUB_DATA_OFF) {
		snprintf(why, len, "mmap of the stub's data in the target: %s", err ? strerror(-err) : "elsewhere");
		return unmap_stub(in, r, err ? STUB_FILE_SIZE : STUB_DATA_OFF + in->data_size);
	}
	/*
	 * A forked child gets the data zeroed, so its stub is disabled from its
	 * first instruction: the kernel does not copy the uprobe trampoline
	 * that the record sites call into (6.18), so a child that reached one
	 * would crash; untraced, it only runs the originals.
	 */
	inject_phase("data");
	remote_call(r, SYS_madvise, in->base + STUB_DATA_OFF, in->data_size, MADV_WIPEONFORK, 0, 0, 0, &err);
	inject_phase("wipeonfork");
	if (err) {
		snprintf(why, len, "madvise(MADV_WIPEONFORK) in the target: %s", strerror(-err));
		return unmap_stub(in, r, STUB_DATA_OFF + in->data_size);
	}
	snprintf(in->path, sizeof(in->path), "/proc/self/fd/%d", in->file_fd);
	return 0;
}

static int write_data(struct inject *in, struct remote *r, size_t field, const void *v, size_t len);

/*
 * The sampled set's pages and its filter's, given back to the kernel (the
 * process then reads zeroes there: an empty set, and a filter that sends
 * no free to it).  The rest of the data stays: a thread may still hold a
 * nesting slot.  What shares the first page with that is zeroed.
 */
static void clear_set(struct inject *in, struct remote *r)
{
	uint64_t set = in->base + STUB_DATA_OFF + offsetof(struct stub_data, filter), end = in->base + STUB_DATA_OFF + in->data_size;
	uint64_t page = (set + 4095) & ~4095ull;
	static const uint8_t zero[4096];
	int err;

	remote_write(r, set, zero, (page < end ? page : end) - set);
	r->gadget = in->base + STUB_GADGET_OFF;
	if (page < end)
		remote_call(r, SYS_madvise, (long)page, (long)(end - page), MADV_DONTNEED, 0, 0, 0, &err);
	inject_phase("cleared");
}

/*
 * A stub an earlier session left (killed, or detached: it stays mapped),
 * which is byte for byte what this one would map at its place (the same
 * functions, options and heaptrace), with the page of jumps it needs
 * (jumps_reuse()): used again.  Its record sites may still carry a dead
 * session's bytes (their uprobes' int3 or call); they get the file's nop5
 * back.  Its set is emptied, its counters zeroed.  false: none (the caller
 * maps a new one).
 */
static bool reuse_stub(struct inject *in, struct remote *r, const struct probe_plan *plan, const char *maps,
		       uint64_t lo_fn, uint64_t hi_fn, uint8_t *img)
{
	static const uint64_t sites[] = { STUB_SITE_ALLOC, STUB_SITE_FREE };
	struct map_entry e, d;
	char why[200], path[128];
	uint8_t *now = malloc(STUB_FILE_SIZE);
	uint64_t planned_jumps = in->jumps;
	bool found = false;

	for (const char *pos = maps; now && !found && maps_next(&pos, &e);) {
		const char *next = pos;
		if (!strstr(e.path, "memfd:heaptrace-stub") || e.hi - e.lo != STUB_FILE_SIZE || e.perms[2] != 'x' ||
		    !maps_next(&next, &d) || d.lo != e.lo + STUB_DATA_OFF || d.hi - d.lo != in->data_size || d.path[0] ||
		    place_farthest(e.lo, e.hi, lo_fn, hi_fn) >= PLACE_REACH)
			continue;
		in->base = e.lo;
		in->jumps = planned_jumps;
		if ((in->jumps && !jumps_reuse(in, r, plan, maps)) || image_build(in, plan, img, why, sizeof(why)) ||
		    remote_read(r, e.lo, now, STUB_FILE_SIZE))
			continue;
		for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
			memcpy(now + sites[i], img + sites[i], JMP_REL32_LEN);
		/* The gadget's page is scratch for remote calls (their names: share.c's too): not the stub's. */
		memcpy(now + STUB_GADGET_OFF, img + STUB_GADGET_OFF, STUB_FILE_SIZE - STUB_GADGET_OFF);
		if (memcmp(now, img, STUB_FILE_SIZE)) {
			ht_info("fast path: the stub an earlier heaptrace left at 0x%" PRIx64 " is another build's", e.lo);
			continue;
		}
		/* Its record sites are rewritten below: not under a thread stopped on one. */
		if (remote_pc_in(r, e.lo + STUB_SITE_ALLOC, e.lo + STUB_SITE_FREE + 8)) {
			ht_info("fast path: the stub an earlier heaptrace left at 0x%" PRIx64 " has a thread at its record "
				"sites: a new one", e.lo);
			continue;
		}
		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, in->pid, e.lo, e.hi);
		if ((in->file_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			ht_info("fast path: the stub an earlier heaptrace left at 0x%" PRIx64 ": %s: %s", e.lo, path,
				strerror(errno));
			continue;
		}
		found = true;
		for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]) && found; i++)
			found = !remote_write(r, e.lo + sites[i], stub_blob + sites[i], JMP_REL32_LEN);
		found = found && !write_data(in, r, offsetof(struct stub_data, c), &(struct stub_counters){ 0 },
					     sizeof(struct stub_counters));
		if (!found) {
			close(in->file_fd);
			in->file_fd = -1;
		}
	}
	free(now);
	if (!found) {
		in->base = 0;
		in->jumps = planned_jumps;
		return false;
	}
	clear_set(in, r);
	snprintf(in->path, sizeof(in->path), "/proc/self/fd/%d", in->file_fd);
	inject_phase("reused");
	ht_info("fast path: the stub an earlier heaptrace left at 0x%" PRIx64 " is used again", in->base);
	return true;
}

static int write_data(struct inject *in, struct remote *r, size_t field, const void *v, size_t len)
{
	return remote_write(r, in->base + STUB_DATA_OFF + field, v, len);
}

static int set_enabled(struct inject *in, struct remote *r, uint32_t on)
{
	return write_data(in, r, offsetof(struct stub_data, enabled), &on, sizeof(on));
}

/* The sampling countdown's first draw and the stub's random state: each process its own. */
static int seed_data(struct inject *in, struct remote *r)
{
	uint64_t seed = 0;
	int64_t countdown, gil_left;

	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed) || !seed)
		seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^ ((uint64_t)in->pid << 32);
	countdown = in->sample_rate ? (int64_t)ht_sample_interval(in->sample_rate, (uint32_t)(seed >> 32)) : 0;
	gil_left = in->sample_rate ? (int64_t)ht_sample_interval(in->sample_rate, (uint32_t)seed) : 0;
	struct stub_walk_info w;
	share_walk_info(in, r, &w);
	int err = write_data(in, r, offsetof(struct stub_data, prng), &seed, sizeof(seed));
	err = err ? err : write_data(in, r, offsetof(struct stub_data, w), &w, sizeof(w));
	err = err ? err : write_data(in, r, offsetof(struct stub_data, gil_left), &gil_left, sizeof(gil_left));
	return err ? err : write_data(in, r, offsetof(struct stub_data, countdown), &countdown, sizeof(countdown));
}

/* A record site's uprobe: a uprobe_multi link, or before Linux 6.6 a perf event's, as --no-inject's. */
static int attach_site(struct inject *in, struct tracer *tr, enum tracer_prog prog, uint64_t off)
{
	uint64_t cookie = 0;
	int err = tr->multi ? tracer_attach_multi(tr, prog, in->path, &off, &cookie, 1, in->pid) : -EOPNOTSUPP;

	return err == -EOPNOTSUPP ? tracer_attach(tr, prog, in->path, off, 0, in->pid) : err;
}

static int attach_sites(struct inject *in, struct tracer *tr)
{
	/* The tests' kernel whose uprobes never fire at the record sites (inject_check_delivery() must catch it). */
	const char *none = getenv("HEAPTRACE_TEST_NO_SITES");
	if (none && *none == '1')
		return 0;
	int err = attach_site(in, tr, PROG_STUB_ALLOC, STUB_SITE_ALLOC);

	return err ? err : attach_site(in, tr, PROG_STUB_FREE, STUB_SITE_FREE);
}

/* Where the uprobes' BPF programs find the stub's nesting table (bpf/calls.bpf.h, in_stub_call()). */
static int tell_bpf(struct inject *in, struct tracer *tr)
{
	uint64_t data = in->base + STUB_DATA_OFF;

	return tracer_set_stub(tr, in->pid, data + offsetof(struct stub_data, active),
			       data + offsetof(struct stub_data, depth));
}

static uint32_t pow2_at_least(uint64_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 24))
		p <<= 1;
	return p;
}

static int install(struct inject *in, struct remote *r, struct probe_plan *plan, struct tracer *tr)
{
	char why[200] = "";
	uint64_t lo = UINT64_MAX, hi = 0;
	uint8_t *img = NULL;
	int good = 0;

	in->done = true;
	inject_phase("stopped");
	char *maps = proc_maps(in->pid);
	/* An earlier heaptrace's jumps go first, whether or not this one installs: uprobes must not go on them. */
	if (inject_reclaim(r, plan) < 0) {
		snprintf(why, sizeof(why), "an earlier heaptrace's jump could not be taken out");
		goto fail;
	}
	if (!maps) {
		snprintf(why, sizeof(why), "cannot read its memory map");
		goto fail;
	}
	in->py = (struct stub_py){ 0 };
	if (in->pyf && in->pyf->on && pyframes_stub(in->pyf, maps, &in->py, &in->py_code_type))
		ht_info("Python frames: off in PID %d: %s is not mapped where its file says", in->pid, in->pyf->path);
	/* Where each function is, and that its bytes are the file's: no breakpoint, no earlier stub. */
	for (int i = 0; i < in->n; i++) {
		struct inject_fn *f = &in->fns[i];
		const struct probe *p = &plan->probes[f->probe];
		uint64_t off = p->offset - p->delta;
		uint8_t file[sizeof(f->saved)];
		int fd = open(p->path, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || pread(fd, file, sizeof(file), off) != sizeof(file) || !(f->addr = maps_file_addr(maps, fd, off)) ||
		    remote_read(r, f->addr, f->saved, sizeof(f->saved)))
			f->addr = 0;
		/*
		 * A thread at the entry, or just after an instruction the pre-stub
		 * undoes, takes the jump well; one further in is stepped out of the
		 * bytes first (a loop calling the function is caught there now and
		 * then, and the function kept its uprobes for the session).
		 */
		uint64_t first_lo = f->addr + (f->skip ? f->skip + 1 : 0), first_hi = f->addr + f->len;
		bool inside = f->addr && remote_pc_in(r, first_lo, first_hi);
		const char *bad = !f->addr ? "not mapped in the target" :
				  memcmp(file, f->saved, f->len) ? "its code in the target is not the file's "
								   "(another tool's breakpoint, or an earlier stub)" :
				  inside && remote_step_out(r, first_lo, first_hi, 16) ? "a thread is stopped inside its first bytes" :
									     NULL;
		if (inside && !bad)
			ht_info("fast path: PID %d: a thread stopped inside the first bytes of %s, stepped out of them",
				in->pid, p->func);
		if (bad && in->whole) {
			snprintf(why, sizeof(why), "%s: %s", p->func, bad);
			f->addr = 0;
		} else if (bad) {
			ht_info("fast path: %s keeps its uprobes: %s", p->func, bad);
			f->addr = 0;
		}
		if (fd >= 0)
			close(fd);
	}
	if (*why)
		goto fail;
	/* 1024 at least: stub/decide.c's bucket_of() XORs up to 256 buckets of a granule into a bucket's number. */
	_Static_assert(1024 >= 1u << (STUB_GRANULE_MAX - 4), "a granule's buckets exceed the set");
	in->buckets = in->sample_rate ? pow2_at_least(in->max_live / 4 > 1024 ? in->max_live / 4 : 1024) : 1;
	in->data_size = (STUB_DATA_SIZE(in->buckets) + 4095) & ~4095ull;
	if (place_reach(in, plan, maps, STUB_DATA_OFF + in->data_size, &lo, &hi, why, sizeof(why)))
		goto fail;
	/* Only the functions found and in reach stay; an adopted process takes them all or none. */
	int n = 0;
	for (int i = 0; i < in->n; i++) {
		if (in->fns[i].addr) {
			in->fns[n++] = in->fns[i];
		} else {
			plan->probes[in->fns[i].probe].stub = false;
			plan->probes[in->fns[i].probe].given_back = true;
		}
	}
	in->n = n;
	if (!in->n) {
		snprintf(why, sizeof(why), "no function to redirect");
		goto fail;
	}
	if (!(img = malloc(STUB_FILE_SIZE))) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	/* An earlier session's stub, the same as this one would be: used again, not mapped anew beside it. */
	if (!reuse_stub(in, r, plan, maps, lo, hi, img)) {
		if (!(in->base = place_near(maps, lo, hi, STUB_DATA_OFF + in->data_size))) {
			snprintf(why, sizeof(why), "no free address space within 2 GiB of the allocator");
			goto fail;
		}
		if (image_build(in, plan, img, why, sizeof(why)) || map_stub(in, r, img, why, sizeof(why)))
			goto fail;
		/* The stub's gadget makes its calls; failed, the far functions keep their uprobes (not patched below). */
		if (in->jumps && (jumps_build(in, plan, img, why, sizeof(why)) || jumps_map(in, r, img, why, sizeof(why)))) {
			ht_info("fast path: no page of jumps (%s): the functions beyond the stub's reach keep their uprobes",
				why);
			*why = 0;
		}
	}

	share_install(in, r, maps);
	if (seed_data(in, r)) {
		snprintf(why, sizeof(why), "cannot write the stub's data");
		goto fail;
	}
	inject_phase("seeded");
	int err = attach_sites(in, tr);
	if (!err)
		err = tell_bpf(in, tr);
	inject_phase("sites");
	if (err) {
		snprintf(why, sizeof(why), "cannot attach the record sites' uprobes: %s", strerror(-err));
		goto fail;
	}
	for (int i = 0; i < in->n; i++) {
		struct inject_fn *f = &in->fns[i];
		uint8_t jmp[sizeof(f->saved)];
		uint64_t at = f->addr + f->skip;
		uint64_t to = f->far ? jumps_slot(in, i) : inject_entry(in, i);
		int32_t rel = (int32_t)(to - (at + JMP_REL32_LEN));

		if (f->far && !in->jumps)
			continue;

		/* The jump, then int3 over the rest of what was displaced: nothing may run there. */
		memset(jmp, 0xcc, f->len - f->skip);
		jmp[0] = 0xe9;
		memcpy(jmp + 1, &rel, 4);
		if (remote_write(r, at, jmp, f->len - f->skip)) {
			snprintf(why, sizeof(why), "%s: cannot write its code", plan->probes[f->probe].func);
			if (!in->whole)
				ht_info("fast path: %s keeps its uprobes: cannot write its code", plan->probes[f->probe].func);
			continue;
		}
		f->patched = true;
		good++;
		inject_phase("patched");
	}
	give_back(in, plan);
	/* Batching or not, told to the stub before it is on. */
	int ring_err = good && (!in->whole || good == in->n) ? ring_install(in, r, plan, tr) : 0;
	if (!good || (in->whole && good < in->n) || ring_err || set_enabled(in, r, 1)) {
		if (ring_err)
			snprintf(why, sizeof(why), "cannot write the stub's data: %s", strerror(-ring_err));
		else if (!good || !in->whole || good == in->n)
			snprintf(why, sizeof(why), "no function redirected");
		inject_remove(in, r);
		give_back(in, plan);
		goto fail;
	}
	in->enabled = true;
	inject_phase("enabled");
	/* CPython's redirected slots: at the fast entries now there are some (a -p session points them later). */
	if (in->pyt)
		pytables_point(in->pyt, r, inject_fast_entry_of, in);
	if (in->share_map && in->on_share)
		in->on_share(in->on_share_arg, in, in->share_map, in->share_rows, maps);
	if (in->py.kind && in->on_python)
		in->on_python(in->on_python_arg, in);
	int far = 0, fast = 0, gil = 0;
	for (int i = 0; i < in->n; i++) {
		far += in->fns[i].far && in->fns[i].patched;
		fast += in->fns[i].fast && in->fns[i].patched;
		/* The plan's mark is STUB_FN_GIL's (spec_stub_fill()): its fast entry counts down the GIL's. */
		gil += in->fns[i].fast && in->fns[i].patched && plan->probes[in->fns[i].probe].gil;
	}
	char jumps[96] = "", fasts[96] = "", gils[48] = "";
	if (far)
		snprintf(jumps, sizeof(jumps), " (%d through the page of jumps at 0x%" PRIx64 ")", far, in->jumps);
	if (gil)
		snprintf(gils, sizeof(gils), ", %d on the GIL's one countdown", gil);
	if (fast)
		snprintf(fasts, sizeof(fasts), " (%d decided by fast entries%s)", fast, gils);
	ht_info("fast path: a stub at 0x%" PRIx64 " (%s), %d functions redirected%s, %s%s", in->base, in->path, good,
		jumps, in->sample_rate ? "unsampled calls stay in the process" :
		in->batching ? "events batched" : "one record site per call", fasts);
	free(img);
	free(maps);
	return 0;
fail:
	give_back(in, plan);
	snprintf(in->why, sizeof(in->why), "%s", why);
	if (!in->whole)
		ht_info("fast path: not installed (%s): uprobes instead", why);
	free(img);
	free(maps);
	return -1;
}

int inject_install(struct inject *in, struct remote *r, struct probe_plan *plan, struct tracer *tr)
{
	/* --mmap: the stub's mappings are heaptrace's, made through the target's threads: not its program's. */
	tracer_remote(tr, in->pid, true);
	int rc = install(in, r, plan, tr);
	tracer_remote(tr, in->pid, false);
	return rc;
}

uint64_t inject_fast_entry_of(void *arg, uint64_t func)
{
	const struct inject *in = arg;

	for (int i = 0; in->enabled && i < in->n; i++)
		if (in->fns[i].addr == func && in->fns[i].patched && in->fns[i].direct)
			return in->fns[i].direct;
	return 0;
}

void inject_remove(struct inject *in, struct remote *r)
{
	if (!in->base || in->shared)
		return;
	inject_phase("remove");
	set_enabled(in, r, 0);
	in->enabled = false;
	inject_phase("disabled");
	for (int i = 0; i < in->n; i++) {
		struct inject_fn *f = &in->fns[i];
		if (f->patched && !restore_fn(r, f))
			f->patched = false;
		inject_phase("restored");
	}
	/* What stays costs no memory: the sampled set's pages go back (up to 16 MiB a session, else). */
	if (in->buckets > 1)
		clear_set(in, r);
}

/* --- --follow-fork: a forked child's copy of the stub --- */

int inject_child(struct inject *kid, const struct inject *parent, pid_t pid, struct tracer *tr)
{
	char path[64];
	struct remote r = { .pid = pid, .mem_fd = -1 };
	int err = 0;

	if (!parent->base || !parent->enabled)
		return 1;       /* nothing inherited: the functions are the file's */
	/* The parent's events before the fork come first: the child's go to its record sites, at once. */
	ring_sync(parent);
	*kid = *parent;
	kid->pid = pid;
	kid->file_fd = -1;
	/* The tables' mapping came with the fork (shared): the parent's side writes it. */
	kid->share_fd = -1;
	kid->share_map = NULL;
	kid->on_share = NULL;
	kid->seen = (struct stub_counters){ 0 };
	/* Its data came wiped: no ring; its events go through the record sites. */
	kid->ring = NULL;
	kid->batching = false;
	kid->ring_tr = NULL;
	kid->shared = inject_shares_memory(parent->pid, pid);
	if ((kid->file_fd = fcntl(parent->file_fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		err = -errno;
		goto fail;
	}
	snprintf(kid->path, sizeof(kid->path), "/proc/self/fd/%d", kid->file_fd);
	if (kid->shared) {
		/* Its calls run the parent's stub, in the parent's memory: only the record sites' probes are its own. */
		if ((err = attach_sites(kid, tr)) || (err = tell_bpf(kid, tr)))
			goto fail;
		ht_info("fast path: PID %d shares the memory of PID %d: its recorded calls reach the same stub", pid,
			parent->pid);
		if (kid->py.kind && kid->on_python)
			kid->on_python(kid->on_python_arg, kid);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	if ((r.mem_fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		err = -errno;
		goto fail;
	}
	/*
	 * Its copy of the record sites may hold the parent's breakpoint or a
	 * call into the parent's uprobe trampoline, which fork does not copy:
	 * the file's bytes go back before its own probes go on.  Its data came
	 * zeroed (MADV_WIPEONFORK): a countdown and a seed of its own, and an
	 * empty set (the parent's sampled blocks it inherited are the parent's).
	 */
	static const uint64_t sites[] = { STUB_SITE_ALLOC, STUB_SITE_FREE };
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]) && !err; i++)
		err = remote_write(&r, kid->base + sites[i], stub_blob + sites[i], JMP_REL32_LEN);
	inject_phase("child-nop5");
	if (!err)
		err = attach_sites(kid, tr);
	inject_phase("child-sites");
	if (!err)
		err = tell_bpf(kid, tr);
	if (!err)
		err = seed_data(kid, &r);
	inject_phase("child-seeded");
	if (!err)
		err = set_enabled(kid, &r, 1);
	inject_phase("child-enabled");
	if (err) {
		/*
		 * Its functions as the file has them, so that uprobes can take
		 * them (a uprobe on a jump would resume inside it).  Its stub
		 * stays disabled: its data is still zero.
		 */
		for (int i = 0; i < kid->n; i++)
			if (kid->fns[i].patched && !restore_fn(&r, &kid->fns[i]))
				kid->fns[i].patched = false;
		goto fail;
	}
	kid->enabled = true;
	close(r.mem_fd);
	ht_info("fast path: PID %d has its own copy of the stub, enabled", pid);
	if (kid->py.kind && kid->on_python)
		kid->on_python(kid->on_python_arg, kid);
	return 0;
fail:
	if (r.mem_fd >= 0)
		close(r.mem_fd);
	bool restored = !kid->shared;
	for (int i = 0; i < kid->n; i++)
		restored &= !kid->fns[i].patched;
	inject_free(kid);
	kid->base = 0;
	kid->enabled = false;
	if (!restored) {
		ht_err("--follow-fork: PID %d: the fast path failed (%s) and its functions still jump to "
		       "the stub: its calls of them are not traced", pid, strerror(-err));
		return -1;
	}
	ht_info("fast path: not in PID %d (%s): uprobes instead", pid, strerror(-err));
	return 1;
}

void inject_reset(struct inject *in)
{
	inject_carry(in, in);
	memset(&in->seen, 0, sizeof(in->seen));
	in->undelivered = in->delivered = false;
	inject_free(in);
	in->base = 0;
	in->done = in->armed = in->enabled = false;
	in->recorded_at = 0;    /* the new program's stub is checked afresh (inject_check_delivery()) */
	in->jumps = 0;
	for (int i = 0; i < in->n; i++) {
		in->fns[i].addr = 0;
		in->fns[i].far = in->fns[i].fast = in->fns[i].patched = false;
	}
}

void inject_free(struct inject *in)
{
	ring_release(in);
	if (in->file_fd >= 0)
		close(in->file_fd);
	in->file_fd = -1;
	if (in->share_map && in->on_share)
		in->on_share(in->on_share_arg, in, NULL, 0, NULL);
	share_free(in);
}
