/*
 * Exact mode's batching, heaptrace's side of the producer: the ring's
 * file, its mapping into the target, and what the stub is told.  All of it
 * happens with every thread of the target stopped, before the stub is
 * enabled, so the stub's data (its ring, the session's epoch, the cache of
 * stacks sent) changes between two of any thread's instructions.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inject/remote.h"
#include "inject/state.h"
#include "inject/phase.h"
#include "inject/ring.h"
#include "probe/plan.h"
#include "util/log.h"
#include "util/procfs.h"

#define NAME "heaptrace-ring"
#define MASK (HT_RING_SLOTS - 1ull)


/* fd's file as a ring, mapped here: the header zeroed, every slot free for its first lap. */
static int ring_init(struct ring *r, int fd, __u32 tgid)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->tgid = tgid;
	if (ftruncate(fd, HT_RING_SIZE))
		goto fail;
	void *m = mmap(NULL, HT_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	r->hdr = m;
	r->slots = (struct ht_ev *)((char *)m + HT_RING_OFF);
	memset(r->hdr, 0, HT_RING_OFF);
	for (__u64 i = 0; i < HT_RING_SLOTS; i++)
		r->slots[i].seq = i;
	return 0;
fail:;
	int err = -errno;
	close(fd);
	r->fd = -1;
	return err;
}

int ring_create(struct ring *r, __u32 tgid)
{
	int fd = memfd_create(NAME, MFD_CLOEXEC);

	if (fd < 0) {
		memset(r, 0, sizeof(*r));
		r->fd = -1;
		return -errno;
	}
	return ring_init(r, fd, tgid);
}

void ring_destroy(struct ring *r)
{
	if (r->hdr)
		munmap(r->hdr, HT_RING_SIZE);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* --- the condition --- */

static bool expr_stub_only(const struct ht_alloc_spec *s, const struct ht_expr *e)
{
	for (unsigned i = 0; i < e->n && i < HT_EXPR_TERMS; i++)
		for (unsigned j = 0; j < e->t[i].n && j < HT_EXPR_FACTORS; j++) {
			const struct ht_factor *f = &e->t[i].f[j];
			if (f->kind == HT_FACTOR_MEM_RET ||
			    (f->kind == HT_FACTOR_MEM && (f->value >= HT_MAX_MEM || s->mem[f->value].base)))
				return false;
		}
	return true;
}

bool ring_batch_off(void)
{
	const char *env = getenv("HEAPTRACE_BATCH");

	return env && !strcmp(env, "0");
}

/* Why this session cannot batch (NULL: it can), in why. */
static const char *why_not(const struct inject *in, const struct probe_plan *plan, char *why, size_t len)
{
	if (ring_batch_off())
		return snprintf(why, len, "HEAPTRACE_BATCH=0"), why;
	if (in->walk == STUB_WALK_NONE)
		return snprintf(why, len, "the stub does not walk stacks"), why;
	for (int k = 0; k < plan->n; k++)
		if (!plan->probes[k].stub)
			return snprintf(why, len, "%s keeps its uprobes", plan->probes[k].func), why;
	for (int i = 0; i < in->n; i++) {
		const struct probe *p = &plan->probes[in->fns[i].probe];
		const struct ht_alloc_spec *s = &plan->specs[p->spec];
		bool reads_args = false;
		for (unsigned k = 0; k < s->n_mem && k < HT_MAX_MEM; k++)
			reads_args |= s->mem[k].base != 0;
		if (!in->fns[i].patched)
			return snprintf(why, len, "%s is not redirected", p->func), why;
		if (reads_args || !expr_stub_only(s, &s->size) || !expr_stub_only(s, &s->ptr) ||
		    !expr_stub_only(s, &s->objects) || !expr_stub_only(s, &s->arena))
			return snprintf(why, len, "%s reads memory that only BPF can read", p->func), why;
	}
	return NULL;
}

/*
 * Where the thread's libc keeps its kernel id, from the thread pointer:
 * glibc's struct pthread (tid at 0x2d0 on x86-64) or musl's (0x30), if
 * that is what every stopped thread holds there.  0: none fits (the stub
 * asks gettid, a system call per event).
 */
static __u32 tid_offset(struct remote *r)
{
	static const __u32 offs[] = { 0x2d0, 0x30 };

	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		size_t seen = 0;
		for (size_t i = 0; i < r->n; i++) {
			const struct remote_thread *t = &r->t[i];
			__u32 v = 0;
			if (!t->stopped || t->loops)
				continue;
			if (!t->regs.fs_base || remote_read(r, t->regs.fs_base + offs[k], &v, sizeof(v)) || v != (__u32)t->tid) {
				seen = 0;
				break;
			}
			seen++;
		}
		if (seen)
			return offs[k];
	}
	return 0;
}

/* --- the ring in the target --- */

/* A ring the stub will not use again: a producer still holding it gives up at once (nothing is lost: no reader). */
static void retire(struct remote *r, __u64 at)
{
	__u64 one = 1;

	if (at)
		remote_write(r, at + offsetof(struct ht_ring, gave_up), &one, sizeof(one));
}

/*
 * The ring an earlier session left at at, used again when no producer is
 * between taking a position and publishing it (a slot free for a position
 * taken: its producer is about to write it).  Positions go on from head:
 * tail moves there (what the old session left is not this one's), every
 * slot free for its position in the next lap; a producer still waiting on
 * a position before it finds tail past it and does not write.
 */
static bool reuse(struct inject *in, const char *maps, uint64_t at)
{
	struct map_entry e;
	char path[128];
	int fd = -1;

	for (const char *pos = maps; fd < 0 && maps_next(&pos, &e);) {
		if (e.lo != at || e.hi - e.lo != HT_RING_SIZE || !strstr(e.path, "memfd:" NAME) || strncmp(e.perms, "rw-s", 4))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, in->pid, e.lo, e.hi);
		fd = open(path, O_RDWR | O_CLOEXEC);
	}
	if (fd < 0)
		return false;
	struct ring *g = in->ring;
	struct ht_ring *h = mmap(NULL, HT_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		close(fd);
		return false;
	}
	struct ht_ev *slots = (struct ht_ev *)((char *)h + HT_RING_OFF);
	__u64 head = h->head, tail = h->tail;
	for (__u64 i = 0; i < HT_RING_SLOTS; i++) {
		__u64 s = slots[i].seq;
		if ((s & MASK) == i && s >= tail && s < head) {
			ht_info("fast path: the ring an earlier heaptrace left at 0x%" PRIx64 " has a producer inside: a new one",
				at);
			munmap(h, HT_RING_SIZE);
			close(fd);
			return false;
		}
	}
	for (__u64 i = 0; i < HT_RING_SLOTS; i++) {
		__u64 q = (head & ~MASK) + i;
		slots[i].seq = q < head ? q + HT_RING_SLOTS : q;
	}
	h->tail = head;
	h->lost = h->gave_up = h->full_waits = 0;
	h->sleeping = 0;
	h->alive++;
	*g = (struct ring){ .hdr = h, .slots = slots, .target_addr = at, .fd = fd, .tgid = (__u32)in->pid };
	ht_info("fast path: the ring an earlier heaptrace left at 0x%" PRIx64 " is used again", at);
	return true;
}

/* A new ring: the target's memfd (closed there once mapped), mapped in heaptrace through /proc. */
static int fresh(struct inject *in, struct remote *r, char *why, size_t len)
{
	static const char name[] = NAME;
	uint64_t name_at = in->base + STUB_GADGET_OFF + REMOTE_GADGET_SIZE + 64;
	char path[64];
	int err;

	_Static_assert(REMOTE_GADGET_SIZE + 64 + sizeof(name) <= STUB_FILE_SIZE - STUB_GADGET_OFF, "the name does not fit beside the gadget");
	r->gadget = in->base + STUB_GADGET_OFF;
	if ((err = remote_write(r, name_at, name, sizeof(name)))) {
		snprintf(why, len, "cannot write the target's memory: %s", strerror(-err));
		return -1;
	}
	long fd = remote_call(r, SYS_memfd_create, (long)name_at, MFD_CLOEXEC, 0, 0, 0, 0, &err);
	inject_phase("ring-memfd");
	if (err) {
		snprintf(why, len, "memfd_create in the target: %s", strerror(-err));
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", in->pid, fd);
	int lfd = open(path, O_RDWR | O_CLOEXEC);
	long at = 0;
	if (lfd < 0 || (err = ring_init(in->ring, lfd, (__u32)in->pid))) {
		snprintf(why, len, "cannot make the ring's file %s: %s", path, strerror(lfd < 0 ? errno : -err));
	} else {
		at = remote_call(r, SYS_mmap, 0, HT_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0, &err);
		if (err || at <= 0) {
			snprintf(why, len, "mmap of the ring in the target: %s", strerror(err ? -err : EINVAL));
			at = 0;
			ring_destroy(in->ring);
		}
	}
	inject_phase("ring-mapped");
	remote_call(r, SYS_close, fd, 0, 0, 0, 0, 0, &err);
	inject_phase("ring-closed");
	in->ring->target_addr = (__u64)at;
	return at ? 0 : -1;
}

/*
 * Whether the stub may stamp events with the time-stamp counter (HT_EV_TICKS):
 * a process may have made rdtsc fault (prctl(PR_SET_TSC, PR_TSC_SIGSEGV),
 * as rr does to its tracees).  Asked in the target, the answer written in
 * the ring's header.  Unstamped, its events take the drain's time.
 */
static void stamp_or_not(struct ring *g, struct remote *r)
{
	const char *env = getenv("HEAPTRACE_STAMP");       /* a test and measuring hook: 0, no stamps */
	int err = 0;

	g->hdr->stamp = 0;
	g->hdr->tsc_mode = 0;
	if (env && !strcmp(env, "0"))
		return;
	remote_call(r, SYS_prctl, PR_GET_TSC, (long)(g->target_addr + offsetof(struct ht_ring, tsc_mode)), 0, 0, 0, 0,
		    &err);
	if (!err && __atomic_load_n(&g->hdr->tsc_mode, __ATOMIC_ACQUIRE) == PR_TSC_ENABLE)
		__atomic_store_n(&g->hdr->stamp, 1, __ATOMIC_RELEASE);
	else
		ht_info("fast path: the ring's events take the drain's time: the process may not read the time-stamp "
			"counter (%s)", err ? strerror(-err) : "PR_SET_TSC");
}

int ring_install(struct inject *in, struct remote *r, const struct probe_plan *plan, struct tracer *tr)
{
	uint64_t at = in->base + STUB_DATA_OFF + offsetof(struct stub_data, r);
	struct { __u64 ring; __u32 epoch, tid_off; } cur;
	static const __u64 none[1u << STUB_SENT_BITS];
	char why[200] = "";
	int err;

	_Static_assert(offsetof(struct stub_ring, epoch) == 8 && offsetof(struct stub_ring, tid_off) == 12 &&
		       offsetof(struct stub_ring, sent) >= sizeof(cur), "stub_ring's first words");
	if ((err = remote_read(r, at, &cur, sizeof(cur))))
		return err;
	ring_release(in);
	bool on = !why_not(in, plan, why, sizeof(why));
	/* A test hook: the ring is mapped but not drained by heaptrace (tests/targets/t_ringdrain reads it). */
	const char *nodrain = getenv("HEAPTRACE_RING_NODRAIN");
	bool drain = !nodrain || strcmp(nodrain, "1");
	if (on && !(in->ring = calloc(1, sizeof(*in->ring)))) {
		snprintf(why, sizeof(why), "out of memory");
		on = false;
	}
	if (on) {
		in->ring->fd = -1;
		char *maps = proc_maps(in->pid);
		if (!(cur.ring && maps && reuse(in, maps, cur.ring))) {
			retire(r, cur.ring);
			on = !fresh(in, r, why, sizeof(why));
		}
		free(maps);
	} else {
		retire(r, cur.ring);
	}
	if (on && drain && (err = drain_register(tr, in->ring))) {
		snprintf(why, sizeof(why), "the drain refused the ring: %s", strerror(-err));
		retire(r, in->ring->target_addr);
		ring_destroy(in->ring);
		on = false;
	}
	if (on)
		stamp_or_not(in->ring, r);
	in->ring_tr = on && drain ? tr : NULL;
	if (!on && !cur.ring) {
		/* No ring before, none now: the stub's data stays as it is. */
		ht_info("fast path: no batching (%s): one record site per recorded call", why);
		return 0;
	}
	cur.ring = on ? in->ring->target_addr : 0;
	cur.epoch++;
	cur.tid_off = on ? tid_offset(r) : 0;
	/* The cache of stacks sent, empty: this session's drain knows none of them. */
	if ((err = remote_write(r, at + offsetof(struct stub_ring, sent), none, sizeof(none))) ||
	    (err = remote_write(r, at, &cur, sizeof(cur))))
		return err;
	inject_phase("ring");
	in->batching = on;
	if (on)
		ht_info("fast path: events batched in a ring at 0x%" PRIx64 " (thread ids %s)", (uint64_t)cur.ring,
			cur.tid_off ? "read from the thread pointer" : "by gettid");
	else
		ht_info("fast path: no batching (%s): one record site per recorded call", why);
	return 0;
}

void ring_release(struct inject *in)
{
	if (in->ring_tr)
		drain_unregister(in->ring_tr, in->ring);
	in->ring_tr = NULL;
	if (in->ring) {
		if (in->ring->hdr)
			ring_destroy(in->ring);
		free(in->ring);
	}
	in->ring = NULL;
	in->batching = false;
}

void ring_sync(const struct inject *in)
{
	/* A second: a thread preempted between taking a slot and publishing it is back long before. */
	if (in->ring_tr && drain_through(in->ring_tr, in->ring, 1000) == -ETIMEDOUT)
		ht_info("fast path: PID %d: a slot of its ring still unpublished after 1 s: its events after it "
			"are accounted after its child's first ones", in->pid);
}
