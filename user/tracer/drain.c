#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracer/state.h"  /* before the skeletons: they name our shared structs */
#include "heaptrace.skel.h"
#include "drain.skel.h"
#include "util/array.h"
#include "util/log.h"
#include "util/ticks.h"
#include "util/time.h"
#include "tracer/drain.h"
#include "tracer/pair.h"
#include "symbolize/pyframes.h"
#include "tracer/internal.h"

struct drained {
	struct ring *r;
	uint32_t slot;
	uint64_t held;          /* the last scan's end: slots before it not consumed were held back (any_new() looks past it) */
	uint64_t at_volume;     /* the --interval-bytes stop its last run stopped at (0: none): nothing new for it until it moves */
	uint32_t lane;          /* its lane of pair_blocks (struct ht_drain_ctx's) */
};

/*
 * Slots a run holds back at most (a quarter of the ring), so that the frees
 * among them pair with the allocations consumed before them
 * (tracer/pair.h): else every block alive across a run's end goes through
 * the live map.
 */
#define HOLD (HT_RING_SLOTS / 4)

/* ring_threads as mapped: an array's elements are 8-byte aligned, so the struct's size must be a multiple of 8. */
#define RING_THREADS_SIZE ((size_t)HT_RING_THREAD_SLOTS * sizeof(struct ht_ring_thread))
_Static_assert(sizeof(struct ht_ring_thread) % 8 == 0, "ring_threads' elements are the struct, unpadded");

/* What a load of the drain's object gave. */
struct loaded {
	struct drain *obj;
	int err;
	double ms;
	uint32_t verified;      /* instructions the verifier walked for the program */
};

struct drain_state {
	/* One pass at a time, and the list: the thread, drain_now() and the counters' readers. */
	pthread_mutex_t lock;
	struct drained *rings;
	size_t n, cap;
	struct drain *obj;              /* bpf/drain.bpf.c, with the main object's maps */
	int prog_fd;                    /* -1: not loaded (yet) */
	int load_err;                   /* could not load (-errno): said once, no ring taken */
	/* The object loaded by a thread of its own from start-up on (drain_preload), taken at its join. */
	pthread_t preload;
	bool preloading;
	struct loaded pre;
	pthread_t thread;
	bool running;
	int stop;                       /* the thread ends (atomic) */
	/* Of rings no longer registered, by slot (ring_full_waits, ring_lost). */
	uint64_t full_waits[HT_MAX_PROCS], lost[HT_MAX_PROCS];
	/* Held frees of threads found gone (settle_gone()), by slot. */
	uint64_t exit_frees[HT_MAX_PROCS], unmatched[HT_MAX_PROCS];
	__s64 over_seen;                /* ring_held[1] when settle_gone() last emptied gone threads' slots */
	struct ht_ring_thread *threads; /* ring_threads, mapped (HT_RING_THREAD_SLOTS) */
	struct pairing pairs;           /* a run's allocations freed in the same run (tracer/pair.h) */
	uint32_t lanes;                 /* the lanes of pair_blocks taken, a bit each */
	uint32_t nlanes;                /* pair_blocks' lanes (lanes_of()) */
	struct tick_clock clock;        /* the events' time (HT_EV_TICKS) */
	/* For -v. */
	uint64_t passes, runs, events, run_ns, pair_ns;
	double load_ms;
	uint32_t verified;              /* instructions the verifier walked for the program */
};

/*
 * pair_blocks' lanes: HT_DRAIN_LANES where several processes may be
 * traced (--follow-fork, -p A,B, --cgroup), the last one shared by the
 * rings beyond the first ones, which hold nothing back there; else one
 * (768 KiB, not 3 MiB of kernel memory), whose ring holds back while it
 * is the only one.
 */
static uint32_t lanes_of(const struct tracer *tr)
{
	return tr->skel->rodata->follow_fork ? HT_DRAIN_LANES : 1;
}

/* May a run of this ring hold back?  In a lane of its own, or alone in the only lane. */
static bool may_hold(const struct drain_state *d, const struct drained *dr)
{
	return dr->lane + 1 < d->nlanes || (d->nlanes == 1 && d->n == 1);
}

static int futex(void *addr, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, addr, op, val, timeout, NULL, 0);
}

/* The drain's object, its maps the main object's, into l.  No lock: the preload's thread runs it while passes find nothing to do. */
static void load_object(struct tracer *tr, struct loaded *l)
{
	double t0 = now_ms();
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = tr->ktypes[0] ? tr->ktypes : NULL);
	struct drain *o = drain__open_opts(&opts);
	int err = o ? tracer_share_maps(tr, o->obj) : -errno;
	/* Its own map: as many stacks as the stacks map holds. */
	if (!err)
		err = bpf_map__set_max_entries(o->maps.ring_stacks, bpf_map__max_entries(tr->skel->maps.stacks));
	if (!err)
		err = bpf_map__set_max_entries(o->maps.pair_blocks, HT_RING_SLOTS * lanes_of(tr));
	if (!err)
		err = drain__load(o);
	*l = (struct loaded){ .err = err, .ms = now_ms() - t0 };
	if (err) {
		drain__destroy(o);
		return;
	}
	l->obj = o;
	/* For -v: what the verifier walked, most of the load. */
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(o->progs.drain), &info, &len))
		l->verified = info.verified_insns;
}

static void *preload_main(void *arg)
{
	struct tracer *tr = arg;

	load_object(tr, &tr->drain->pre);
	return NULL;
}

/* The preload's object, once its thread is done (joined here). */
static void take_preload(struct drain_state *d, struct loaded *l)
{
	pthread_join(d->preload, NULL);
	d->preloading = false;
	*l = d->pre;
}

/* The drain's object, loaded or the preload's.  Under the lock.  0 or -1 (said once, d->load_err). */
static int load(struct tracer *tr, struct drain_state *d)
{
	struct loaded l;

	if (d->prog_fd >= 0)
		return 0;
	if (d->load_err)
		return -1;
	if (d->preloading)
		take_preload(d, &l);
	else
		load_object(tr, &l);
	if (l.err) {
		char why[700];
		if (tracer_refusal(why, sizeof(why)))
			ht_err("cannot load the ring's drain program (%s: %s): no batching, one record site per call",
			       strerror(-l.err), why);
		else
			ht_err("cannot load the ring's drain program (%s): no batching, one record site per call",
			       strerror(-l.err));
		d->load_err = l.err < 0 ? l.err : -EINVAL;
		return -1;
	}
	d->threads = mmap(NULL, RING_THREADS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			  bpf_map__fd(l.obj->maps.ring_threads), 0);
	if (d->threads == MAP_FAILED) {
		int err = errno;
		ht_err("cannot map the drain's threads (%s): no batching, one record site per call", strerror(err));
		d->threads = NULL;
		drain__destroy(l.obj);
		d->load_err = -err;
		return -1;
	}
	d->obj = l.obj;
	d->prog_fd = bpf_program__fd(l.obj->progs.drain);
	d->load_ms = l.ms;
	d->verified = l.verified;
	return 0;
}

/* Published slots from tail on: the program consumes no further (a stack's frames past them wait). */
static uint32_t published(const struct ring *r, uint64_t tail)
{
	uint32_t n = 0;

	while (n < HT_RING_SLOTS &&
	       __atomic_load_n(&r->slots[(tail + n) & (HT_RING_SLOTS - 1)].seq, __ATOMIC_ACQUIRE) == tail + n + 1)
		n++;
	return n;
}

/*
 * The slots a run consumes of the m scanned from tail: all of them, or
 * with hold all but the last HOLD or so.  While a producer waits, never
 * nothing: all when the ring is not full (stub/ring.c's ordered fallback,
 * a walk that failed, waits for tail to pass what it saw) or when holding
 * back would leave nothing to consume (the ring full of positions taken
 * but not yet published); a producer waiting for room on a full ring gets
 * it from the rest.
 */
static uint32_t to_consume(const struct drained *dr, uint64_t tail, uint32_t m, bool hold)
{
	struct ht_ring *h = dr->r->hdr;

	if (!hold)
		return m;
	if (__atomic_load_n(&h->waiting, __ATOMIC_ACQUIRE) &&
	    (m <= HOLD || __atomic_load_n(&h->head, __ATOMIC_ACQUIRE) - tail < HT_RING_SLOTS))
		return m;
	return m > HOLD ? pair_boundary(dr->r->slots, tail, m, m - HOLD) : 0;
}

/*
 * The target's ring stops before an allocation once its process has
 * allocated the bytes tracer_volume_stop() set, until the snapshot moves
 * the stop on: a program that runs ahead of the drain gets a snapshot at
 * each multiple of --interval-bytes all the same.  Other processes' rings
 * do not.
 */
static uint64_t volume_stop(const struct tracer *tr, const struct ring *r)
{
	return r->tgid == tr->skel->rodata->target_tgid ? __atomic_load_n(&tr->volume_stop, __ATOMIC_ACQUIRE) : 0;
}

/*
 * Drain one ring until nothing published is left (or the program stops
 * making progress); with hold, a single run that may hold back the last
 * slots (to_consume()); with volume, up to the target's volume stop.
 * Under the lock.
 */
static int drain_ring(struct tracer *tr, struct drain_state *d, struct drained *dr, bool hold, bool volume)
{
	struct ring *r = dr->r;
	struct ht_ring *h = r->hdr;
	uint64_t stop = volume ? volume_stop(tr, r) : 0;

	dr->at_volume = 0;

	for (int round = 0; round < 64; round++) {
		uint64_t tail = h->tail;
		uint32_t n = published(r, tail);
		if (!n)
			break;
		uint64_t t0 = monotonic_ns();
		uint32_t m = pair_mark(&d->pairs, r->slots, tail, n), c = to_consume(dr, tail, m, hold);
		uint64_t t1 = monotonic_ns();
		d->pair_ns += t1 - t0;
		dr->held = tail + m;
		if (!c)
			break;          /* a stack whose frames are not all published yet, or all held back */
		tracer_live_room(tr, c);
		if (pyf_active())
			pyf_note_ring((pid_t)r->tgid, r->slots, tail, c);
		struct ht_drain_ctx ctx = { .ring = (uintptr_t)r->slots, .tail = tail, .max = c, .tgid = r->tgid,
					    .exec_gen = r->exec_gen };
		uint64_t clock_ns, clock_ticks;
		ctx.tick_mult = tick_clock_now(&d->clock, &clock_ns, &clock_ticks);
		ctx.clock_ns = clock_ns;
		ctx.clock_ticks = clock_ticks;
		ctx.stop_bytes = stop;
		ctx.lane = dr->lane;
		LIBBPF_OPTS(bpf_test_run_opts, run, .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));
		int err = bpf_prog_test_run_opts(d->prog_fd, &run);
		d->run_ns += monotonic_ns() - t1;
		d->runs++;
		if (err)
			return -errno;
		ctx.done = run.retval & ~HT_DRAIN_AT_VOLUME;
		if (run.retval & HT_DRAIN_AT_VOLUME)
			dr->at_volume = stop;
		if (ctx.done > c)
			ctx.done = c;
		/* Free each slot for its next lap, then move tail: a producer reads seq, not tail. */
		for (uint32_t k = 0; k < ctx.done; k++)
			__atomic_store_n(&r->slots[(tail + k) & (HT_RING_SLOTS - 1)].seq, tail + k + HT_RING_SLOTS,
					 __ATOMIC_RELEASE);
		__atomic_store_n(&h->tail, tail + ctx.done, __ATOMIC_RELEASE);
		d->events += ctx.done;
		if (__atomic_load_n(&h->waiting, __ATOMIC_ACQUIRE))
			futex(&h->tail, FUTEX_WAKE, INT32_MAX, NULL);
		if (ctx.done < n)
			break;          /* held back, a stack whose frames are not all published yet, a slot not read, the volume stop */
	}
	return 0;
}

/*
 * Anything for a pass now: slots published past those held back, a
 * quarter of the ring of them when a pass may hold back (a ring with a lane): each
 * pass scans again what the last held back, so passes for a few slots
 * would cost more than the pairs save.  The producers ring the bell at
 * each quarter (and when they wait); the period takes what is left.  A
 * ring at the volume stop has nothing new until the stop moves.
 */
static bool any_new(const struct tracer *tr, const struct drain_state *d)
{
	for (size_t i = 0; i < d->n; i++) {
		const struct drained *dr = &d->rings[i];
		uint64_t tail = dr->r->hdr->tail;
		uint32_t enough = may_hold(d, dr) && !d->pairs.off ? HOLD : 1;
		if (dr->at_volume && dr->at_volume == volume_stop(tr, dr->r))
			continue;
		if (published(dr->r, dr->held > tail ? dr->held : tail) >= enough)
			return true;
	}
	return false;
}

/* A gone thread's held frees, by whose they were: the main thread's are unmatched_frees. */
static void settle_entry(struct drain_state *d, __u32 tid, const struct ht_ring_thread *t)
{
	__u32 slot = t->proc & (HT_MAX_PROCS - 1);

	if (tid == t->tgid)
		d->unmatched[slot] += t->held_frees;
	else
		d->exit_frees[slot] += t->held_frees;
}

static bool gone(__u32 tgid, __u32 tid)
{
	return syscall(SYS_tgkill, tgid, tid, 0) && errno == ESRCH;
}

/*
 * ring_threads, read in place (mapped at load: the drain does not run
 * while the lock is held, and a record site writes only its own thread's
 * entry: its last allocation, or a whole entry in an empty slot, which
 * this leaves alone, ring_thread_make()): the held frees of threads that
 * are gone settled and their slots emptied; reclaim: every gone thread's
 * slot, holding frees or not, for a newcomer whose slot it is.  What it
 * settled.
 */
static __s64 settle_slots(struct drain_state *d, bool reclaim)
{
	__s64 settled = 0;

	for (__u32 i = 0; i < HT_RING_THREAD_SLOTS; i++) {
		struct ht_ring_thread *t = &d->threads[i];
		__u32 tid = t->tid;
		if (!tid || (!t->held_frees && !reclaim) || !gone(t->tgid, tid))
			continue;
		settle_entry(d, tid, t);
		settled += t->held_frees;
		memset(t, 0, sizeof(*t));
	}
	return settled;
}

/* ring_threads_over (a hash by tid), in batches: the held frees of threads that are gone settled, their entries deleted. */
static __s64 settle_over(struct drain_state *d)
{
	int fd = bpf_map__fd(d->obj->maps.ring_threads_over);
	__u32 keys[256], batch;
	struct ht_ring_thread vals[256];
	__s64 settled = 0;
	void *in = NULL;

	for (int round = 0; round <= HT_RING_THREADS_OVER / 256; round++) {
		__u32 n = 256;
		LIBBPF_OPTS(bpf_map_batch_opts, o);
		int err = bpf_map_lookup_batch(fd, in, &batch, keys, vals, &n, &o);
		for (__u32 i = 0; i < n; i++) {
			if (!vals[i].held_frees || !gone(vals[i].tgid, keys[i]))
				continue;
			settle_entry(d, keys[i], &vals[i]);
			settled += vals[i].held_frees;
			bpf_map_delete_elem(fd, &keys[i]);
		}
		if (err)
			break;          /* ENOENT: the last batch */
		in = &batch;
	}
	return settled;
}

/*
 * Frees the allocator's own code made that matched no block, held by
 * their threads (struct ht_ring_thread): a thread that has exited made
 * them at its exit (thread_exit_frees; the main thread's are
 * unmatched_frees), as the record sites' thread_exit() tells.  Looked at
 * only while some are held.  And once a thread has found its slot of
 * ring_threads held by another (ring_held[1] grew), the slots of threads
 * that are gone are emptied: tids come in sequence, so a process that
 * makes threads all its life meets the slots of its own dead threads
 * after 16384 tids, and the drain (which cannot tell a dead thread from a
 * living one) would send every newcomer to the hash.  Under the lock.
 */
static void settle_gone(struct drain_state *d)
{
	int held_fd = bpf_map__fd(d->obj->maps.ring_held);
	__u32 zero = 0, one = 1;
	__s64 held = 0, over = 0, settled = 0;

	if (bpf_map_lookup_elem(held_fd, &zero, &held) || bpf_map_lookup_elem(held_fd, &one, &over))
		return;
	bool reclaim = over != d->over_seen;
	if (held <= 0 && !reclaim)
		return;
	d->over_seen = over;
	settled = settle_slots(d, reclaim);
	if (held > 0)
		settled += settle_over(d);
	if (settled) {
		held -= settled;
		bpf_map_update_elem(held_fd, &zero, &held, BPF_ANY);
	}
}

/*
 * Every ring, once; hold: a run may hold back the last slots (pairs across
 * runs), else every published slot is consumed; volume: up to the volume
 * stop.  Under the lock.
 */
static int pass(struct tracer *tr, struct drain_state *d, bool sync, bool hold, bool volume)
{
	int rc = 0;

	/* No ring before the object is loaded (drain_register() loads it first): nothing to drain. */
	if (d->prog_fd < 0)
		return 0;
	d->passes++;
	/*
	 * Holding back only in a lane of its own: a held-back free's
	 * allocation keeps its block in the ring's lane, by position.
	 */
	hold = hold && !sync && !d->pairs.off;
	for (size_t i = 0; i < d->n; i++) {
		int err = drain_ring(tr, d, &d->rings[i], hold && may_hold(d, &d->rings[i]), volume);
		if (err && !rc) {
			ht_err("cannot drain the event ring of process %u: %s", d->rings[i].r->tgid, strerror(-err));
			rc = -1;
		}
		/* heaptrace is alive: a producer waiting on a full ring goes on waiting rather than giving up. */
		__atomic_add_fetch(&d->rings[i].r->hdr->alive, 1, __ATOMIC_RELEASE);
	}
	/* Threads exit rarely: their held frees are looked at every tenth pass, and by every drain_now(). */
	if (sync || d->passes % 10 == 0)
		settle_gone(d);
	return rc;
}


/* The bells a sleeping drain answers: every ring's, up to what futex_waitv takes at once. */
#define BELLS 128

/*
 * Sleep until a bell of bells[0..n) moves from seen (a producer rang it)
 * or the period ends.  True unless the period ended.  Several rings wait
 * on all their bells at once (futex_waitv, Linux 5.16): on one alone, an
 * exec'd child's ring that filled waited out the period at each lap (a
 * churn exec'd by a followed shell paid 1,100-1,600 ns a pair against
 * 350).  Where futex_waitv is missing, the first ring's bell alone.
 */
static bool wait_bells(struct ht_ring **bells, const uint32_t *seen, size_t n, const struct timespec *period)
{
	static bool no_waitv;

	if (!n)
		return nanosleep(period, NULL) != 0;
#ifdef SYS_futex_waitv
	if (n > 1 && !no_waitv) {
		struct futex_waitv w[BELLS];
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += period->tv_nsec;
		until.tv_sec += period->tv_sec + until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		for (size_t i = 0; i < n; i++)
			/* Shared, not FUTEX_PRIVATE_FLAG: the producer is another process (stub/ring.c's bell()). */
			w[i] = (struct futex_waitv){ .val = seen[i], .uaddr = (uintptr_t)&bells[i]->bell,
						     .flags = FUTEX_32 };
		if (syscall(SYS_futex_waitv, w, (unsigned)n, 0, &until, CLOCK_MONOTONIC) >= 0)
			return true;
		if (errno != ENOSYS)
			return errno != ETIMEDOUT;
		no_waitv = true;
	}
#endif
	return futex(&bells[0]->bell, FUTEX_WAIT, seen[0], period) == 0 || errno != ETIMEDOUT;
}

/*
 * Every HT_RING_PERIOD_MS, or when a producer rings its ring's bell (it
 * does when heaptrace sleeps and the ring is filling).
 */
static void *drain_thread(void *arg)
{
	struct tracer *tr = arg;
	struct drain_state *d = tr->drain;
	struct timespec period = { 0, HT_RING_PERIOD_MS * 1000000L };
	struct ht_ring *bells[BELLS];
	uint32_t seen[BELLS];

	/*
	 * A pass the period woke consumes every slot: what a producer
	 * published before it went idle waits one period at most.  A pass a
	 * producer woke (the bell: the ring fills) may hold back.
	 */
	bool hold = true;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&d->lock);
		/* The bells as they were before the pass: a producer's ring during the pass makes another. */
		size_t nb = d->n < BELLS ? d->n : BELLS;
		for (size_t i = 0; i < nb; i++) {
			bells[i] = d->rings[i].r->hdr;
			seen[i] = __atomic_load_n(&bells[i]->bell, __ATOMIC_ACQUIRE);
		}
		pass(tr, d, false, hold, true);
		/* A ring gone in the pass (none is: drain_unregister() takes the lock) or come: from the first pass on. */
		if (d->n < nb)
			nb = d->n;
		for (size_t i = 0; i < d->n; i++)
			__atomic_store_n(&d->rings[i].r->hdr->sleeping, 1, __ATOMIC_SEQ_CST);
		/* A producer that published before it saw sleeping rang no bell: look once more. */
		bool more = any_new(tr, d);
		pthread_mutex_unlock(&d->lock);
		hold = true;
		if (!more)
			hold = wait_bells(bells, seen, nb, &period);
		pthread_mutex_lock(&d->lock);
		for (size_t i = 0; i < d->n; i++)
			__atomic_store_n(&d->rings[i].r->hdr->sleeping, 0, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&d->lock);
	}
	return NULL;
}

static int slot_of(const struct tracer *tr, uint32_t tgid, uint32_t *slot)
{
	struct ht_proc p;

	if (tgid == tr->skel->rodata->target_tgid) {
		*slot = 0;
		return 0;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(tr->skel->maps.procs), &tgid, &p))
		return -1;
	*slot = p.slot & (HT_MAX_PROCS - 1);
	return 0;
}

/* The drain's state, made at the first ring or at the preload. */
static struct drain_state *state(struct tracer *tr)
{
	struct drain_state *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	pthread_mutex_init(&d->lock, NULL);
	d->prog_fd = -1;
	d->nlanes = lanes_of(tr);
	/* A test and measuring hook: every event through the live map, as before pairs. */
	const char *pair = getenv("HEAPTRACE_PAIR");
	d->pairs.off = pair && !strcmp(pair, "0");
	tick_clock_start(&d->clock);
	tr->drain = d;
	return d;
}

/* load() under the lock. */
static int load_locked(struct tracer *tr, struct drain_state *d)
{
	pthread_mutex_lock(&d->lock);
	int rc = load(tr, d);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void drain_ready(struct tracer *tr)
{
	struct drain_state *d = tr->drain;

	if (d && d->preloading)
		load_locked(tr, d);
}

void drain_preload(struct tracer *tr)
{
	struct drain_state *d = tr->drain ? tr->drain : state(tr);

	if (d && !d->preloading && d->prog_fd < 0 && !d->load_err)
		d->preloading = !pthread_create(&d->preload, NULL, preload_main, tr);
}

int drain_register(struct tracer *tr, struct ring *r)
{
	struct drain_state *d = tr->drain;
	uint32_t slot;

	if (slot_of(tr, r->tgid, &slot))
		return -ESRCH;
	if (!d && !(d = state(tr)))
		return -ENOMEM;
	/*
	 * Loaded (or the preload's, waited for) before the ring is used: a
	 * launched program waits before its first instruction, not amid its
	 * first allocations on a full ring; a failure leaves the record sites.
	 */
	if (load_locked(tr, d))
		return d->load_err;
	struct ht_totals t = { 0 };
	bpf_map_lookup_elem(bpf_map__fd(tr->skel->maps.totals), &slot, &t);
	r->exec_gen = t.execs;
	pthread_mutex_lock(&d->lock);
	int rc = ARRAY_RESERVE(d->rings, d->cap, d->n + 1, 4);
	if (!rc) {
		/* One lane: what the lone ring held back is consumed before another ring's runs use it. */
		if (d->nlanes == 1 && d->n == 1)
			drain_ring(tr, d, &d->rings[0], false, false);
		/* A lane of its own while one is free: the target's first, then the first children's. */
		uint32_t lane = 0;
		while (lane + 1 < d->nlanes && (d->lanes >> lane & 1))
			lane++;
		if (lane + 1 < d->nlanes)
			d->lanes |= 1u << lane;
		d->rings[d->n++] = (struct drained){ .r = r, .slot = slot, .lane = lane };
	}
	pthread_mutex_unlock(&d->lock);
	if (rc)
		return -ENOMEM;
	/* Its record sites keep a thread's last allocation where the drain does (account.bpf.h). */
	bpf_map_update_elem(bpf_map__fd(tr->skel->maps.ring_procs), &slot, &(uint32_t){ 1 }, BPF_ANY);
	if (!d->running) {
		int err = pthread_create(&d->thread, NULL, drain_thread, tr);
		if (err) {
			drain_unregister(tr, r);
			return -err;
		}
		d->running = true;
	}
	return 0;
}

void drain_unregister(struct tracer *tr, struct ring *r)
{
	struct drain_state *d = tr->drain;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->n; i++) {
		if (d->rings[i].r != r)
			continue;
		if (published(r, r->hdr->tail))
			drain_ring(tr, d, &d->rings[i], false, false);
		bpf_map_update_elem(bpf_map__fd(tr->skel->maps.ring_procs), &d->rings[i].slot, &(uint32_t){ 0 },
				    BPF_ANY);
		d->full_waits[d->rings[i].slot] += __atomic_load_n(&r->hdr->full_waits, __ATOMIC_RELAXED);
		d->lost[d->rings[i].slot] += __atomic_load_n(&r->hdr->lost, __ATOMIC_RELAXED);
		/* Its last run above consumed what it held back: nothing of it is left in its lane. */
		if (d->rings[i].lane + 1 < d->nlanes)
			d->lanes &= ~(1u << d->rings[i].lane);
		d->rings[i] = d->rings[--d->n];
		break;
	}
	pthread_mutex_unlock(&d->lock);
}

static int drain_sync(const struct tracer *tr, bool volume)
{
	struct drain_state *d = tr->drain;

	if (!d)
		return 0;
	pthread_mutex_lock(&d->lock);
	int rc = pass((struct tracer *)tr, d, true, false, volume);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int drain_now(const struct tracer *tr)
{
	return drain_sync(tr, true);
}

int drain_through(const struct tracer *tr, const struct ring *r, unsigned timeout_ms)
{
	uint64_t head = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE), t0 = monotonic_ns();

	for (;;) {
		/* Past the volume stop: a position held there would never come. */
		if (drain_sync(tr, false))
			return -EIO;
		if (__atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE) >= head)
			return 0;
		if (monotonic_ns() - t0 > timeout_ms * 1000000ull)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
}

void drain_counters(const struct tracer *tr, uint32_t from, uint32_t to, uint64_t out[HT_COUNTER_MAX])
{
	struct drain_state *d = tr->drain;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	for (uint32_t s = from; s < to && s < HT_MAX_PROCS; s++) {
		out[HT_RING_FULL_WAITS] += d->full_waits[s];
		out[HT_RING_LOST] += d->lost[s];
		out[HT_THREAD_EXIT_FREES] += d->exit_frees[s];
		out[HT_UNMATCHED_FREES] += d->unmatched[s];
	}
	for (size_t i = 0; i < d->n; i++)
		if (d->rings[i].slot >= from && d->rings[i].slot < to) {
			out[HT_RING_FULL_WAITS] += __atomic_load_n(&d->rings[i].r->hdr->full_waits, __ATOMIC_RELAXED);
			out[HT_RING_LOST] += __atomic_load_n(&d->rings[i].r->hdr->lost, __ATOMIC_RELAXED);
		}
	pthread_mutex_unlock(&d->lock);
}

void drain_memory(const struct tracer *tr, uint64_t *maps, uint64_t *progs_memlock, int *progs)
{
	struct drain_state *d = tr->drain;
	struct bpf_map *m;

	*maps = *progs_memlock = 0;
	*progs = 0;
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	if (d->obj) {
		bpf_object__for_each_map(m, d->obj->obj)
			if (!tracer_shares_map(tr, m))
				*maps += tracer_memlock_of(bpf_map__fd(m));
		*progs_memlock = tracer_memlock_of(d->prog_fd);
		*progs = 1;
	}
	pthread_mutex_unlock(&d->lock);
}

void drain_pairs(const struct tracer *tr, uint64_t *pairs, uint64_t *carried)
{
	struct drain_state *d = tr->drain;

	*pairs = *carried = 0;
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	*pairs = d->pairs.pairs;
	*carried = d->pairs.carried;
	pthread_mutex_unlock(&d->lock);
}

void drain_close(struct tracer *tr)
{
	struct drain_state *d = tr->drain;

	if (!d)
		return;
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	if (d->running)
		pthread_join(d->thread, NULL);
	if (d->preloading) {
		/* A run that published nothing: the object goes unused. */
		struct loaded l;
		take_preload(d, &l);
		drain__destroy(l.obj);
	}
	if (d->prog_fd >= 0)
		ht_info("ring drain: %" PRIu64 " passes, %" PRIu64 " program runs, %" PRIu64 " slots, %.1f ms in the "
			"program (%.0f ns a slot), %" PRIu64 " pairs (%" PRIu64 " across runs) found in %.1f ms (%.0f ns a "
			"slot), loaded in %.1f ms (%u instructions verified)", d->passes, d->runs, d->events, d->run_ns / 1e6,
			d->events ? (double)d->run_ns / d->events : 0.0, d->pairs.pairs, d->pairs.carried, d->pair_ns / 1e6,
			d->events ? (double)d->pair_ns / d->events : 0.0, d->load_ms, d->verified);
	if (d->threads)
		munmap(d->threads, RING_THREADS_SIZE);
	drain__destroy(d->obj);
	pair_free(&d->pairs);
	pthread_mutex_destroy(&d->lock);
	free(d->rings);
	free(d);
	tr->drain = NULL;
}
