/*
 * The ring's consumer (user/tracer/drain.c, bpf/drain.bpf.c) against a
 * producer written here: this process loads the tracer for itself, makes a
 * ring with heaptrace.h's layout (as user/inject/ring.c does, without a
 * target), registers it, publishes known events and checks the exact
 * figures in the maps.  Then (with an argument) the drain's cost per
 * event.  Root: it loads BPF.  One "ok - ..." or "not ok - ..." line a
 * check; exits 1 if any failed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracer/tracer.h"
#include "heaptrace.skel.h"
#include "tracer/drain.h"
#include "util/log.h"
#include "util/time.h"

static int failed;

static void check(const char *what, long long got, long long want)
{
	if (got == want) {
		printf("ok - %s = %lld\n", what, got);
	} else {
		printf("not ok - %s = %lld, want %lld\n", what, got, want);
		failed = 1;
	}
}

/* A test-only ring creator: ring_create()'s layout (every seq its index), no target. */
static int test_ring(struct ring *r, __u32 tgid)
{
	memset(r, 0, sizeof(*r));
	r->fd = memfd_create("heaptrace-ring", MFD_CLOEXEC);
	if (r->fd < 0 || ftruncate(r->fd, HT_RING_SIZE))
		return -1;
	void *m = mmap(NULL, HT_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (m == MAP_FAILED)
		return -1;
	r->hdr = m;
	r->slots = (struct ht_ev *)((char *)m + HT_RING_OFF);
	r->tgid = tgid;
	for (__u64 i = 0; i < HT_RING_SLOTS; i++)
		r->slots[i].seq = i;
	return 0;
}

/* The producer: a position (one add), the slot filled, then published. */
static __u64 take(struct ring *r, __u32 n)
{
	return __atomic_fetch_add(&r->hdr->head, n, __ATOMIC_RELAXED);
}

static long futex(void *addr, int op, uint32_t val, const struct timespec *t)
{
	return syscall(SYS_futex, addr, op, val, t, NULL, 0);
}

/* The stub's way with a full ring: ring the bell if heaptrace sleeps, wait on tail (10 ms at a time). */
static void publish(struct ring *r, __u64 pos, struct ht_ev *ev)
{
	struct ht_ev *s = &r->slots[pos & (HT_RING_SLOTS - 1)];
	struct ht_ring *h = r->hdr;
	struct timespec ten = { 0, 10000000 };

	if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos)
		__atomic_add_fetch(&h->full_waits, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos) {
		__atomic_add_fetch(&h->waiting, 1, __ATOMIC_SEQ_CST);
		uint32_t tail = (uint32_t)__atomic_load_n(&h->tail, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&h->sleeping, __ATOMIC_SEQ_CST)) {
			__atomic_add_fetch(&h->bell, 1, __ATOMIC_SEQ_CST);
			futex(&h->bell, FUTEX_WAKE, 1, NULL);
		}
		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos)
			futex(&h->tail, FUTEX_WAIT, tail, &ten);
		__atomic_sub_fetch(&h->waiting, 1, __ATOMIC_SEQ_CST);
	}
	ev->seq = s->seq;
	memcpy((char *)s + 8, (char *)ev + 8, sizeof(*ev) - 8);
	__atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE);
}

static void put(struct ring *r, struct ht_ev ev)
{
	publish(r, take(r, 1), &ev);
}

static __u64 hash_of(const __u64 *pcs, __u32 depth)
{
	__u64 h = HT_STACK_HASH_SEED;

	for (__u32 i = 0; i < depth; i++)
		h = ht_stack_hash_step(h, pcs[i]);
	return ht_stack_hash_end(h);
}

/* A stack and its frames, one add for all; hold: leave the frames unpublished (published by send_rest). */
static __u64 send_stack(struct ring *r, const __u64 *pcs, __u32 depth, __u32 tid, bool hold)
{
	__u32 n = HT_RING_STACK_SLOTS(depth);
	__u64 pos = take(r, 1 + n);
	struct ht_ev ev = { .kind = HT_EV_STACK, .tid = tid, .hash = hash_of(pcs, depth), .depth = depth };

	publish(r, pos, &ev);
	for (__u32 k = 0; !hold && k < n; k++) {
		struct ht_ev_pcs c = { 0 };
		for (__u32 j = 0; j < HT_RING_PCS && k * HT_RING_PCS + j < depth; j++)
			c.pcs[j] = pcs[k * HT_RING_PCS + j];
		publish(r, pos + 1 + k, (struct ht_ev *)&c);
	}
	return pos;
}

static void send_rest(struct ring *r, __u64 pos, const __u64 *pcs, __u32 depth)
{
	for (__u32 k = 0; k < HT_RING_STACK_SLOTS(depth); k++) {
		struct ht_ev_pcs c = { 0 };
		for (__u32 j = 0; j < HT_RING_PCS && k * HT_RING_PCS + j < depth; j++)
			c.pcs[j] = pcs[k * HT_RING_PCS + j];
		publish(r, pos + 1 + k, (struct ht_ev *)&c);
	}
}

static struct ht_ev alloc_ev(__u32 tid, __u64 ptr, __u64 size, __u64 old, __u64 stack)
{
	return (struct ht_ev){ .kind = HT_EV_ALLOC, .flags = HT_STUB_SAMPLED, .tid = tid, .ptr = ptr, .size = size,
			       .old = old, .objects = 1, .stack = stack };
}

static struct ht_ev free_ev(__u32 tid, __u64 ptr)
{
	return (struct ht_ev){ .kind = HT_EV_FREE, .tid = tid, .ptr = ptr };
}

static struct ht_site site(struct tracer *tr, __u64 stack)
{
	struct ht_site_key k = { .stack = stack, .proc = 0 };
	struct ht_site s = { 0 };

	bpf_map_lookup_elem(tracer_sites_fd(tr), &k, &s);
	return s;
}

static long long counter(struct tracer *tr, enum ht_counter c)
{
	uint64_t v[HT_COUNTER_MAX];

	tracer_counters(tr, 0, v);
	return v[c];
}

/* A second thread of the process: frees made "by" it carry its tid. */
static int other_tid;
static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;

static void *brief(void *arg)
{
	*(int *)arg = gettid();
	return NULL;
}

/*
 * A thread run to its end and gone: pthread_join() returns once the kernel
 * clears the thread's tid, before the thread is released, and until then
 * tgkill() still finds it (drain.c's test of a gone thread).  The window
 * is wide under emulation (Debian's 6.1 under QEMU): wait it out, at most
 * 2 s.  Its tid.
 */
static int brief_thread(void)
{
	int tid = 0;
	pthread_t g;

	pthread_create(&g, NULL, brief, &tid);
	pthread_join(g, NULL);
	for (int i = 0; i < 2000 && !(syscall(SYS_tgkill, getpid(), tid, 0) && errno == ESRCH); i++)
		usleep(1000);
	return tid;
}

static void *other(void *arg)
{
	(void)arg;
	__atomic_store_n(&other_tid, gettid(), __ATOMIC_RELEASE);
	pthread_mutex_lock(&hold);
	pthread_mutex_unlock(&hold);
	return NULL;
}

/* Is ptr a block of the live map (any level)? */
static int is_live(struct tracer *tr, __u64 ptr)
{
	int fds[HT_LIVE_LEVELS], n = tracer_live_fds(tr, fds);
	__u64 key = ht_live_key(ptr, 0);
	struct ht_block b;

	for (int i = 0; i < n; i++)
		if (!bpf_map_lookup_elem(fds[i], &key, &b))
			return 1;
	return 0;
}

/* The next event's position, and whether the drain marked the event at pos paired. */
static __u64 next_pos(struct ring *r)
{
	return r->hdr->head;
}

static int paired(struct ring *r, __u64 pos)
{
	return !!(r->slots[pos & (HT_RING_SLOTS - 1)].flags & HT_EV_PAIRED);
}

static __u32 lifetimes(const struct ht_site *s)
{
	__u32 n = 0;

	for (int i = 0; i < HT_LIFE_BUCKETS; i++)
		n += s->lifetimes[i];
	return n;
}

/*
 * Blocks allocated and freed within one drain run are paired
 * (user/tracer/pair.c) and accounted without the live map: every figure
 * as through it.  With HEAPTRACE_PAIR=0 nothing is paired and the same
 * figures must come out (drain.sh runs both).
 */
static void pairs(struct tracer *tr, struct ring *r, __u32 me)
{
	int on = !(getenv("HEAPTRACE_PAIR") && !strcmp(getenv("HEAPTRACE_PAIR"), "0"));
	__u64 c[5] = { 0x404100, 0x404200, 0x404300, 0x404400, 0x404500 }, hc = hash_of(c, 5);
	long long allocs = counter(tr, HT_ALLOCS), frees = counter(tr, HT_FREES);
	long long unmatched = counter(tr, HT_UNMATCHED_FREES), missed = counter(tr, HT_MISSED_FREES);
	__u64 p[16];
	struct ht_totals t0, t;

	/* P0: a block that stays live, its free unseen (the address comes back in P1). */
	send_stack(r, c, 5, me, false);
	put(r, alloc_ev(me, 0x30000070, 90, 0, hc));
	drain_now(tr);
	check("pairs: a block of an earlier run is live", is_live(tr, 0x30000070), 1);
	tracer_totals(tr, 0, &t0);

	/* P1: each case in one run. */
	p[0] = next_pos(r);
	put(r, alloc_ev(me, 0x30000100, 1000000, 0, hc));       /* peak: both big blocks live at once */
	put(r, alloc_ev(me, 0x30000200, 2000000, 0, hc));
	put(r, free_ev(me, 0x30000100));                        /* not temporary: 2000000 came after */
	put(r, free_ev(me, 0x30000200));                        /* not temporary: the last was a free */
	p[1] = next_pos(r);
	put(r, alloc_ev(me, 0x30000010, 10, 0, hc));            /* an address used twice in the run */
	put(r, free_ev(me, 0x30000010));                        /* temporary */
	put(r, alloc_ev(me, 0x30000010, 20, 0, hc));
	put(r, free_ev(me, 0x30000010));                        /* temporary */
	p[2] = next_pos(r);
	put(r, alloc_ev(me, 0x30000030, 50, 0, hc));            /* a double free */
	put(r, free_ev(other_tid, 0x30000030));                 /* another thread's: not temporary */
	put(r, free_ev(me, 0x30000030));                        /* unmatched */
	p[3] = next_pos(r);
	put(r, alloc_ev(me, 0x30000040, 60, 0, hc));            /* realloc'd: freed by the realloc, temporary */
	put(r, alloc_ev(me, 0x30000050, 70, 0x30000040, hc));   /* 60 copied; its new block paired */
	put(r, free_ev(me, 0x30000050));                        /* temporary */
	p[4] = next_pos(r);
	struct ht_ev ae = alloc_ev(me, 0x30000060, 80, 0, hc);
	ae.arena = 0xa1;                                        /* an arena's block: through the live map */
	put(r, ae);
	put(r, free_ev(me, 0x30000060));                        /* temporary */
	p[5] = next_pos(r);
	put(r, alloc_ev(me, 0x30000070, 95, 0, hc));            /* P0's block live still: it comes out (missed) */
	put(r, free_ev(me, 0x30000070));                        /* temporary */
	p[6] = next_pos(r);
	put(r, alloc_ev(me, 0x30000080, 110, 0, hc));           /* freed in the next run */
	drain_now(tr);

	check("pairs: big blocks paired", paired(r, p[0]) + paired(r, p[0] + 1) + paired(r, p[0] + 2) +
	      paired(r, p[0] + 3), on ? 4 : 0);
	check("pairs: an address used twice, two pairs", paired(r, p[1]) + paired(r, p[1] + 1) +
	      paired(r, p[1] + 2) + paired(r, p[1] + 3), on ? 4 : 0);
	check("pairs: double free: the first free paired, not the second",
	      paired(r, p[2]) * 4 + paired(r, p[2] + 1) * 2 + paired(r, p[2] + 2), on ? 6 : 0);
	check("pairs: realloc: the old block's allocation unpaired, the new one paired",
	      paired(r, p[3]) * 4 + paired(r, p[3] + 1) * 2 + paired(r, p[3] + 2), on ? 3 : 0);
	check("pairs: an arena's block unpaired", paired(r, p[4]) + paired(r, p[4] + 1), 0);
	check("pairs: a stale address's new block paired", paired(r, p[5]) + paired(r, p[5] + 1), on ? 2 : 0);
	check("pairs: a block freed in the next run unpaired", paired(r, p[6]), 0);
	check("pairs: allocs", counter(tr, HT_ALLOCS) - allocs, 11);
	check("pairs: frees", counter(tr, HT_FREES) - frees, 9);
	check("pairs: unmatched_frees (the double free)", counter(tr, HT_UNMATCHED_FREES) - unmatched, 1);
	check("pairs: missed_frees (P0's block)", counter(tr, HT_MISSED_FREES) - missed, 1);
	check("pairs: the stale block out of the live map", is_live(tr, 0x30000070), 0);
	check("pairs: the block freed in the next run is live", is_live(tr, 0x30000080), 1);
	struct ht_site sc = site(tr, hc);
	check("pairs: stack C alloc_objects", sc.alloc_objects, 11);
	check("pairs: stack C alloc_bytes", sc.alloc_bytes, 90 + 1000000 + 2000000 + 10 + 20 + 50 + 60 + 70 + 80 + 95 + 110);
	check("pairs: stack C inuse_objects", sc.inuse_objects, 1);
	check("pairs: stack C inuse_bytes", sc.inuse_bytes, 110);
	check("pairs: stack C temporary (the realloc's free of 60 too)", sc.temporary, 6);
	check("pairs: stack C lifetimes (each free, the realloc's too)", lifetimes(&sc), 9);
	check("pairs: stack C missed_frees", sc.missed_frees, 1);
	check("pairs: stack C realloc_objects", sc.realloc_objects, 1);
	check("pairs: stack C realloc_bytes", sc.realloc_bytes, 60);
	tracer_totals(tr, 0, &t);
	check("pairs: totals inuse_bytes", t.inuse_bytes - t0.inuse_bytes, 110 - 90);
	check("pairs: peak_bytes (both big blocks at once)", t.peak_bytes, t0.inuse_bytes + 3000000);

	/* P2: the free of P1's last block. */
	put(r, free_ev(me, 0x30000080));
	drain_now(tr);
	check("pairs: split across two runs: freed", counter(tr, HT_FREES) - frees, 10);
	check("pairs: split across two runs: not live", is_live(tr, 0x30000080), 0);
	check("pairs: stack C inuse_bytes at the end", site(tr, hc).inuse_bytes, 0);
	check("pairs: stack C lifetimes at the end", (sc = site(tr, hc), lifetimes(&sc)), 10);

	/* P3: the old image's pair: counted, dropped, its free ignored. */
	struct ht_totals x = t;
	x.execs = 1;
	bpf_map_update_elem(bpf_map__fd(tr->skel->maps.totals), &(__u32){ 0 }, &x, BPF_ANY);
	long long dropped = counter(tr, HT_EXEC_DROPPED);
	p[7] = next_pos(r);
	put(r, alloc_ev(me, 0x30000090, 120, 0, hc));
	put(r, free_ev(me, 0x30000090));
	drain_now(tr);
	check("pairs: old image: marked as any pair", paired(r, p[7]) + paired(r, p[7] + 1), on ? 2 : 0);
	check("pairs: old image: exec_dropped", counter(tr, HT_EXEC_DROPPED) - dropped, 1);
	check("pairs: old image: frees", counter(tr, HT_FREES) - frees, 10);
	check("pairs: old image: stack C alloc_objects", site(tr, hc).alloc_objects, 11);
	tracer_totals(tr, 0, &x);
	x.execs = 0;
	bpf_map_update_elem(bpf_map__fd(tr->skel->maps.totals), &(__u32){ 0 }, &x, BPF_ANY);
}

/*
 * The drain thread alone, blocks freed 1500 allocations after they were
 * made, three rings' worth: a run holds back the last slots it scanned,
 * so blocks alive across its end pair with frees the next run consumes.
 * Every figure exact, and the same with HEAPTRACE_PAIR=0.
 */
static void carried(struct tracer *tr, struct ring *r, __u32 me)
{
	int on = !(getenv("HEAPTRACE_PAIR") && !strcmp(getenv("HEAPTRACE_PAIR"), "0"));
	__u64 d[4] = { 0x405100, 0x405200, 0x405300, 0x405400 }, hd = hash_of(d, 4);
	const long n = 3 * HT_RING_SLOTS / 2, live = 1500;
	uint64_t pairs0, carried0, pairs1, carried1;
	struct ht_totals t0, t;

	send_stack(r, d, 4, me, false);
	drain_now(tr);
	long long allocs = counter(tr, HT_ALLOCS), frees = counter(tr, HT_FREES);
	long long unmatched = counter(tr, HT_UNMATCHED_FREES), missed = counter(tr, HT_MISSED_FREES);
	tracer_totals(tr, 0, &t0);
	drain_pairs(tr, &pairs0, &carried0);
	uint64_t waits0 = __atomic_load_n(&r->hdr->full_waits, __ATOMIC_RELAXED);
	for (long i = 0; i < n + live; i++) {
		if (i < n)
			put(r, alloc_ev(me, 0x40000000 + i * 32, 32, 0, hd));
		if (i >= live)
			put(r, free_ev(me, 0x40000000 + (i - live) * 32));
	}
	uint64_t t1 = monotonic_ns();
	while (__atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE) != r->hdr->head && monotonic_ns() - t1 < 5000000000ull)
		usleep(1000);
	check("carried: every slot drained by the thread", r->hdr->tail, r->hdr->head);
	drain_pairs(tr, &pairs1, &carried1);
	uint64_t waits = __atomic_load_n(&r->hdr->full_waits, __ATOMIC_RELAXED) - waits0;
	printf("# carried: %lu pairs, %lu across runs, %lu waits on a full ring\n", (unsigned long)(pairs1 - pairs0),
	       (unsigned long)(carried1 - carried0), (unsigned long)waits);
	/*
	 * A run holds back only while no producer waits on a full ring: one
	 * that outruns the drain (one emulated CPU, Debian's kernels under
	 * QEMU: 0 across runs, 4500 blocks through the live map) gets every
	 * slot.  Where the drain kept up, pairs across runs must be found.
	 */
	check("carried: pairs across runs found (none only when the producer waited on a full ring)",
	      carried1 - carried0 > 0 || (on && waits > 0), on);
	check("carried: at most a pair a block", pairs1 - pairs0 <= (uint64_t)n, 1);
	check("carried: allocs", counter(tr, HT_ALLOCS) - allocs, n);
	check("carried: frees", counter(tr, HT_FREES) - frees, n);
	check("carried: unmatched_frees", counter(tr, HT_UNMATCHED_FREES) - unmatched, 0);
	check("carried: missed_frees", counter(tr, HT_MISSED_FREES) - missed, 0);
	struct ht_site sd = site(tr, hd);
	check("carried: stack D alloc_objects", sd.alloc_objects, n);
	check("carried: stack D inuse_objects", sd.inuse_objects, 0);
	check("carried: stack D inuse_bytes", sd.inuse_bytes, 0);
	check("carried: stack D lifetimes", lifetimes(&sd), n);
	check("carried: stack D temporary (each free right after an allocation of 32 B of D)", sd.temporary, n - live);
	tracer_totals(tr, 0, &t);
	check("carried: totals inuse_bytes", t.inuse_bytes, t0.inuse_bytes);
	check("carried: no block left live", is_live(tr, 0x40000000) + is_live(tr, 0x40000000 + (n / 2) * 32) +
	      is_live(tr, 0x40000000 + (n - 1) * 32), 0);
}

/*
 * A new peak epoch within one run: the at-peak values of a site are copied
 * at its first change in the new epoch, so every change of the run made
 * before the epoch moved must have reached the sites by then (the drain
 * holds a run's site changes and adds them at its end: site_deltas.bpf.h).
 * Stack F allocates, stack E's big block moves the epoch on, then F
 * allocates again and E frees its block: F was at 1000 and E at big when
 * the epoch began.  The same with HEAPTRACE_PAIR=0.
 */
static void epochs(struct tracer *tr, struct ring *r, __u32 me)
{
	__u64 e[3] = { 0x408100, 0x408200, 0x408300 }, f[3] = { 0x409100, 0x409200, 0x409300 };
	__u64 he = hash_of(e, 3), hf = hash_of(f, 3);
	struct ht_totals t0, t;

	send_stack(r, e, 3, me, false);
	send_stack(r, f, 3, me, false);
	drain_now(tr);
	tracer_totals(tr, 0, &t0);
	__u64 step = t0.epoch_bytes / 20 < (1 << 20) ? 1 << 20 : t0.epoch_bytes / 20;
	__u64 big = t0.epoch_bytes + step + 1 - (t0.inuse_bytes + 1000);
	put(r, alloc_ev(me, 0x51000000, 1000, 0, hf));
	put(r, alloc_ev(me, 0x51001000, big, 0, he));          /* a new peak epoch */
	put(r, alloc_ev(me, 0x51002000, 2000, 0, hf));
	put(r, free_ev(me, 0x51001000));
	drain_now(tr);
	tracer_totals(tr, 0, &t);
	struct ht_site se = site(tr, he), sf = site(tr, hf);
	check("epochs: the epoch moved on once", t.epoch, t0.epoch + 1);
	check("epochs: peak_bytes (all three blocks)", t.peak_bytes, t0.inuse_bytes + 3000 + big);
	check("epochs: stack E changed in the new epoch", se.epoch, t.epoch);
	check("epochs: stack E's bytes at the peak (its big block)", se.peak_bytes, big);
	check("epochs: stack E inuse_bytes", se.inuse_bytes, 0);
	check("epochs: stack F changed in the new epoch", sf.epoch, t.epoch);
	check("epochs: stack F's bytes at the peak (its first block)", sf.peak_bytes, 1000);
	check("epochs: stack F inuse_bytes", sf.inuse_bytes, 3000);
	check("epochs: stack F alloc_objects", sf.alloc_objects, 2);
}

/* The live filter's count at slot (bpf/live.bpf.h); -1 if unreadable. */
static long long filter_count(struct tracer *tr, __u32 slot)
{
	__u32 cell = slot / HT_LIVE_FILTER_LANES;
	struct ht_live_filter_cell c;

	if (bpf_map_lookup_elem(bpf_map__fd(tr->skel->maps.live_filter), &cell, &c))
		return -1;
	return c.n[slot % HT_LIVE_FILTER_LANES];
}

/*
 * The filter against the live map's keys, every slot: how many slots'
 * counts differ from the keys there (0: it counts exactly, which this
 * process, whose user space deletes nothing from the levels, must see).
 */
static long long filter_errors(struct tracer *tr)
{
	static __u32 want[HT_LIVE_FILTER_SLOTS];
	int fds[HT_LIVE_LEVELS], n = tracer_live_fds(tr, fds);
	long long bad = 0;
	__u64 key, *prev = NULL;

	memset(want, 0, sizeof(want));
	for (int i = 0; i < n; i++, prev = NULL)
		while (!bpf_map_get_next_key(fds[i], prev, &key)) {
			want[ht_live_filter_slot(key)]++;
			prev = &key;
		}
	for (__u32 c = 0; c < HT_LIVE_FILTER_SLOTS / HT_LIVE_FILTER_LANES; c++) {
		struct ht_live_filter_cell v;
		if (bpf_map_lookup_elem(bpf_map__fd(tr->skel->maps.live_filter), &c, &v))
			return -1;
		for (__u32 l = 0; l < HT_LIVE_FILTER_LANES; l++)
			bad += v.n[l] != want[c * HT_LIVE_FILTER_LANES + l];
	}
	return bad;
}

/*
 * A paired allocation at an address whose filter slot another live block
 * holds (a collision): the live map is looked up and has nothing there,
 * so nothing is missed and the other block stays live; then a stale
 * block found through a shared slot still comes out.
 */
static void filter(struct tracer *tr, struct ring *r, __u32 me)
{
	int on = !(getenv("HEAPTRACE_PAIR") && !strcmp(getenv("HEAPTRACE_PAIR"), "0"));
	__u64 e[2] = { 0x406100, 0x406200 }, he = hash_of(e, 2), k1 = 0x50000000, k2 = 0;
	__u32 slot = ht_live_filter_slot(ht_live_key(k1, 0));

	/* Another address of k1's slot (about one in 65536: bounded well above that). */
	for (__u64 i = 1; i < (1u << 24) && !k2; i++)
		if (ht_live_filter_slot(ht_live_key(k1 + i * 16, 0)) == slot)
			k2 = k1 + i * 16;
	check("filter: an address sharing a block's slot found", k2 != 0, 1);
	send_stack(r, e, 2, me, false);
	drain_now(tr);
	long long base = filter_count(tr, slot);
	long long allocs = counter(tr, HT_ALLOCS), frees = counter(tr, HT_FREES);
	long long missed = counter(tr, HT_MISSED_FREES);

	put(r, alloc_ev(me, k1, 16, 0, he));                    /* stays live */
	drain_now(tr);
	check("filter: a live block counted in its slot", filter_count(tr, slot) - base, 1);
	__u64 p = next_pos(r);
	put(r, alloc_ev(me, k2, 32, 0, he));                    /* paired: its slot is not 0, the lookup misses */
	put(r, free_ev(me, k2));
	drain_now(tr);
	check("filter: the colliding block paired", paired(r, p) + paired(r, p + 1), on ? 2 : 0);
	check("filter: missed_frees (none)", counter(tr, HT_MISSED_FREES) - missed, 0);
	check("filter: the other block live still", is_live(tr, k1), 1);
	check("filter: the colliding block not live", is_live(tr, k2), 0);
	check("filter: the slot counts the other block alone", filter_count(tr, slot) - base, 1);

	/* k2's free went unseen: k2 comes back, paired, and the stale k2 comes out despite k1 in the slot. */
	put(r, alloc_ev(me, k2, 48, 0, he));
	drain_now(tr);
	check("filter: both blocks counted in the slot", filter_count(tr, slot) - base, 2);
	p = next_pos(r);
	put(r, alloc_ev(me, k2, 64, 0, he));
	put(r, free_ev(me, k2));
	put(r, free_ev(me, k1));
	drain_now(tr);
	check("filter: the stale block's new one paired", paired(r, p) + paired(r, p + 1), on ? 2 : 0);
	check("filter: missed_frees (the stale block)", counter(tr, HT_MISSED_FREES) - missed, 1);
	check("filter: allocs", counter(tr, HT_ALLOCS) - allocs, 4);
	check("filter: frees", counter(tr, HT_FREES) - frees, 3);
	check("filter: neither block live", is_live(tr, k1) + is_live(tr, k2), 0);
	check("filter: the slot back to its count", filter_count(tr, slot) - base, 0);
	struct ht_site se = site(tr, he);
	check("filter: stack E inuse_objects", se.inuse_objects, 0);
	check("filter: stack E missed_frees", se.missed_frees, 1);
	check("filter: every slot counts the live keys there", filter_errors(tr), 0);
}

/* A tid no thread of this process has (tgkill: ESRCH): a thread that is gone, for drain.c. */
static int no_thread(__u32 tid)
{
	return syscall(SYS_tgkill, getpid(), tid, 0) && errno == ESRCH;
}

/* Thread tid's entry in ring_threads' slot: 1 if the slot is its (tid the slot's tag). */
static int in_slot(struct tracer *tr, __u32 tid, struct ht_ring_thread *t)
{
	__u32 i = tid & (HT_RING_THREAD_SLOTS - 1);

	memset(t, 0, sizeof(*t));
	return !bpf_map_lookup_elem(bpf_map__fd(tr->skel->maps.ring_threads), &i, t) && t->tid == tid;
}

static int in_over(struct tracer *tr, __u32 tid)
{
	struct ht_ring_thread t;

	return !bpf_map_lookup_elem(bpf_map__fd(tr->skel->maps.ring_threads_over), &tid, &t);
}

/*
 * Threads whose tids share a slot of ring_threads (tid & (HT_RING_THREAD_SLOTS
 * - 1)): the slot's holder keeps it, the other goes to ring_threads_over,
 * and each keeps its own last allocation (temporary) and held frees.  A
 * gone thread's slot is emptied by drain.c once a thread went to the hash,
 * and a newcomer takes it.  A tid that was another process's thread: what
 * its entry held is thread_exit_frees.  Fake tids for threads that never
 * ran (no_thread()): the drain knows threads by their events alone.
 */
static void collisions(struct tracer *tr, struct ring *r, __u32 me)
{
	const __u32 S = HT_RING_THREAD_SLOTS;
	__u64 e[3] = { 0x406100, 0x406200, 0x406300 }, he = hash_of(e, 3);
	struct ht_ring_thread t;
	int gone;

	send_stack(r, e, 3, me, false);
	put(r, alloc_ev(me, 0x50000000, 1, 0, he));
	drain_now(tr);
	long long allocs = counter(tr, HT_ALLOCS), frees = counter(tr, HT_FREES);
	long long unmatched = counter(tr, HT_UNMATCHED_FREES), exits = counter(tr, HT_THREAD_EXIT_FREES);
	long long temporary = site(tr, he).temporary;
	check("collision: the main thread holds its slot", in_slot(tr, me, &t), 1);

	/* C1: x shares the main thread's slot; their allocations interleave: each free follows its own thread's. */
	__u32 x = me + S;
	check("collision: a tid sharing the slot is no thread here", no_thread(x), 1);
	put(r, alloc_ev(me, 0x50000010, 10, 0, he));
	put(r, alloc_ev(x, 0x50000020, 20, 0, he));
	put(r, free_ev(me, 0x50000010));                        /* temporary: 10 B of E is the main thread's last */
	put(r, free_ev(x, 0x50000020));                         /* temporary: 20 B of E is x's last */
	struct ht_ev f = free_ev(x, 0x50000030);                /* no block: held by x */
	f.flags = HT_EV_FREE_IN_ALLOCATOR;
	put(r, f);
	drain_now(tr);
	check("collision: the main thread keeps its slot", in_slot(tr, me, &t), 1);
	check("collision: stack E temporary (each thread's own last allocation)",
	      site(tr, he).temporary - temporary, 2);
	check("collision: x's held free, x gone: thread_exit_frees", counter(tr, HT_THREAD_EXIT_FREES) - exits, 1);
	check("collision: x gone: out of ring_threads_over", in_over(tr, x), 0);

	/* C2: a gone thread's slot; y meets it held and goes to the hash, drain.c empties it, z takes it. */
	gone = brief_thread();
	__u32 y = gone + S, z = gone + 2 * S;
	check("collision: tids sharing a gone thread's slot are no threads here", no_thread(y) && no_thread(z), 1);
	put(r, alloc_ev(gone, 0x50000040, 40, 0, he));
	put(r, alloc_ev(y, 0x50000050, 50, 0, he));
	drain_now(tr);
	check("collision: y in ring_threads_over", in_over(tr, y), 1);
	check("collision: the gone thread's slot emptied", in_slot(tr, gone, &t) || t.tid, 0);
	put(r, alloc_ev(z, 0x50000060, 40, 0, he));             /* 40 B of E, as the gone thread's block */
	put(r, free_ev(gone, 0x50000040));                      /* not temporary: the slot is z's now */
	put(r, free_ev(y, 0x50000050));                         /* temporary: y's last, in the hash */
	drain_now(tr);
	check("collision: z holds the emptied slot", in_slot(tr, z, &t), 1);
	check("collision: y stays in ring_threads_over", in_over(tr, y), 1);
	check("collision: stack E temporary (y's, not the gone thread's)", site(tr, he).temporary - temporary, 3);

	/* C3: the other thread's tid, its entry taken for another process's thread (tgid 1) holding 2 frees. */
	f = free_ev(other_tid, 0x50000070);
	f.flags = HT_EV_FREE_IN_ALLOCATOR;
	put(r, f);
	f.ptr = 0x50000080;
	put(r, f);
	drain_now(tr);
	check("collision: the other thread's held frees wait (it lives): only x's counted",
	      counter(tr, HT_UNMATCHED_FREES) - unmatched + counter(tr, HT_THREAD_EXIT_FREES) - exits, 1);
	check("collision: the other thread's slot", in_slot(tr, other_tid, &t) && t.held_frees == 2, 1);
	t.tgid = 1;
	__u32 oi = other_tid & (S - 1);
	bpf_map_update_elem(bpf_map__fd(tr->skel->maps.ring_threads), &oi, &t, BPF_ANY);
	put(r, alloc_ev(other_tid, 0x50000090, 90, 0, he));
	drain_now(tr);
	check("collision: a tid of another process's thread: its held frees thread_exit_frees",
	      counter(tr, HT_THREAD_EXIT_FREES) - exits, 3);
	check("collision: the slot is this process's thread's now", in_slot(tr, other_tid, &t) &&
	      t.tgid == (__u32)getpid() && t.held_frees == 0, 1);

	/* The blocks left: the first, the other thread's and z's. */
	put(r, free_ev(me, 0x50000000));
	put(r, free_ev(other_tid, 0x50000090));
	put(r, free_ev(z, 0x50000060));
	drain_now(tr);
	check("collision: allocs (after the first)", counter(tr, HT_ALLOCS) - allocs, 6);
	check("collision: frees (the first's too; held frees are none)", counter(tr, HT_FREES) - frees, 7);
	check("collision: unmatched_frees (none)", counter(tr, HT_UNMATCHED_FREES) - unmatched, 0);
	check("collision: stack E inuse_objects", site(tr, he).inuse_objects, 0);
}

/* alloc+free pairs of depth 8, drained as the ring fills: ns a drained event. */
static void cost(struct tracer *tr, struct ring *r, __u64 stack, long pairs)
{
	__u32 tid = gettid();
	uint64_t ns = 0, events = 0;
	long done = 0;

	while (done < pairs) {
		long batch = pairs - done < HT_RING_SLOTS / 2 ? pairs - done : HT_RING_SLOTS / 2;
		for (long i = 0; i < batch; i++) {
			put(r, alloc_ev(tid, 0x7000000 + i * 64, 64, 0, stack));
			put(r, free_ev(tid, 0x7000000 + i * 64));
		}
		uint64_t t0 = monotonic_ns();
		drain_now(tr);
		ns += monotonic_ns() - t0;
		events += 2 * batch;
		done += batch;
	}
	printf("# drain cost: %lu events (alloc+free pairs, depth 8) in %.1f ms: %.0f ns an event, %.0f ns a pair\n",
	       (unsigned long)events, ns / 1e6, (double)ns / events, 2.0 * ns / events);
}

int main(int argc, char **argv)
{
	struct tracer tr;
	struct tracer_config cfg = { .tgid = getpid(), .max_live = 1 << 20, .max_stacks = 65536, .max_depth = 64, .batch = true,
				     .stack_mode = HT_STACK_WALK };
	struct ring r;
	pthread_t th;

	ht_verbose = getenv("RING_DRAIN_VERBOSE") != NULL;
	if (tracer_load(&tr, &cfg) || test_ring(&r, getpid()) || drain_register(&tr, &r)) {
		fprintf(stderr, "ring_drain: cannot set up: %s\n", strerror(errno));
		return 2;
	}
	pthread_mutex_lock(&hold);
	pthread_create(&th, NULL, other, NULL);
	while (!__atomic_load_n(&other_tid, __ATOMIC_ACQUIRE))
		usleep(1000);

	__u32 me = gettid();
	__u64 a[8] = { 0x401100, 0x401200, 0x401300, 0x401400, 0x401500, 0x401600, 0x401700, 0x401800 };
	__u64 b[3] = { 0x402100, 0x402200, 0x402300 };
	__u64 ha = hash_of(a, 8), hb = hash_of(b, 3);

	/* Stack A whole; stack B's frames held back: nothing from B's slot on is consumed until they come. */
	send_stack(&r, a, 8, me, false);
	put(&r, alloc_ev(me, 0x1000, 100, 0, ha));
	__u64 bpos = send_stack(&r, b, 3, me, true);
	put(&r, alloc_ev(me, 0x2000, 200, 0, ha));
	drain_now(&tr);
	check("tail stops at a stack whose frames are not published", r.hdr->tail, bpos);
	check("allocs before it", counter(&tr, HT_ALLOCS), 1);
	send_rest(&r, bpos, b, 3);
	put(&r, alloc_ev(me, 0x3000, 50, 0, hb));
	put(&r, free_ev(me, 0x1000));                   /* after B's 50: not temporary */
	put(&r, alloc_ev(me, 0x4000, 300, 0x2000, hb)); /* realloc: 0x2000 (200 B) moved, 200 copied */
	put(&r, free_ev(other_tid, 0x3000));            /* another thread's free of the main thread's block */
	put(&r, (struct ht_ev){ .kind = HT_EV_SKIP });
	send_stack(&r, a, 8, me, false);                /* sent again (the stub's cache forgot it): no collision */
	put(&r, alloc_ev(me, 0x5000, 64, 0, ha));
	put(&r, free_ev(me, 0x5000));                   /* right after its allocation: temporary */
	put(&r, free_ev(me, 0x9000));                   /* never allocated: unmatched */
	r.hdr->full_waits = 2;
	r.hdr->lost = 1;
	drain_now(&tr);

	check("tail: every slot consumed", r.hdr->tail, r.hdr->head);
	check("allocs", counter(&tr, HT_ALLOCS), 5);
	check("frees", counter(&tr, HT_FREES), 4);
	check("unmatched_frees", counter(&tr, HT_UNMATCHED_FREES), 1);
	check("ring_events", counter(&tr, HT_RING_EVENTS), 9);
	check("stub_walks", counter(&tr, HT_STUB_WALKS), 5);
	check("stack_collisions", counter(&tr, HT_STACK_COLLISIONS), 0);
	check("stack_errors", counter(&tr, HT_STACK_ERRORS), 0);
	check("ring_full_waits", counter(&tr, HT_RING_FULL_WAITS), 2);
	check("ring_lost", counter(&tr, HT_RING_LOST), 1);
	struct ht_site sa = site(&tr, ha), sb = site(&tr, hb);
	check("stack A: alloc_objects", sa.alloc_objects, 3);
	check("stack A: alloc_bytes", sa.alloc_bytes, 364);
	check("stack A: inuse_bytes", sa.inuse_bytes, 0);
	check("stack A: temporary", sa.temporary, 1);
	check("stack B: alloc_objects", sb.alloc_objects, 2);
	check("stack B: inuse_objects", sb.inuse_objects, 1);
	check("stack B: inuse_bytes", sb.inuse_bytes, 300);
	check("stack B: realloc_objects", sb.realloc_objects, 1);
	check("stack B: realloc_bytes", sb.realloc_bytes, 200);
	struct ht_totals t;
	tracer_totals(&tr, 0, &t);
	check("totals: inuse_bytes", t.inuse_bytes, 300);
	check("totals: peak_bytes", t.peak_bytes, 364);
	struct ht_stack st = { 0 };
	int found = !bpf_map_lookup_elem(tracer_stacks_fd(&tr), &ha, &st);
	check("stack A stored under its hash", found, 1);
	check("stack A: depth", st.depth, 8);
	int same = 1;
	for (int i = 0; i < 8; i++)
		same &= st.pcs[i] == a[i];
	check("stack A: its frames", same, 1);
	found = !bpf_map_lookup_elem(tracer_stacks_fd(&tr), &hb, &st);
	check("stack B: depth", found ? st.depth : 0, 3);

	/*
	 * Frees by the allocator's own code that match no block: held by their
	 * thread; a thread that has exited made them at its exit, a living one
	 * that makes another call did not.
	 */
	int gone = brief_thread();
	struct ht_ev f = free_ev(gone, 0xa000);
	f.flags = HT_EV_FREE_IN_ALLOCATOR;
	put(&r, f);
	f.ptr = 0xa100;
	put(&r, f);
	f.tid = other_tid;
	f.ptr = 0xb000;
	put(&r, f);
	put(&r, free_ev(other_tid, 0xc000));
	drain_now(&tr);
	check("thread_exit_frees (a thread gone)", counter(&tr, HT_THREAD_EXIT_FREES), 2);
	check("unmatched_frees (+ a living thread's held one, + its plain one)", counter(&tr, HT_UNMATCHED_FREES), 3);

	/* The process executed a new program: what its old image sent is not live, and its frees are no news. */
	struct ht_totals x = t;
	x.execs = 1;
	bpf_map_update_elem(bpf_map__fd(tr.skel->maps.totals), &(__u32){ 0 }, &x, BPF_ANY);
	put(&r, alloc_ev(me, 0x6000, 1000, 0, ha));
	put(&r, free_ev(me, 0x4000));
	drain_now(&tr);
	check("after an exec: allocs", counter(&tr, HT_ALLOCS), 6);
	check("ring_events", counter(&tr, HT_RING_EVENTS), 15);
	check("after an exec: exec_dropped", counter(&tr, HT_EXEC_DROPPED), 1);
	check("after an exec: frees", counter(&tr, HT_FREES), 4);
	check("after an exec: stack A inuse_bytes", site(&tr, ha).inuse_bytes, 0);
	check("after an exec: stack B inuse_bytes (its free ignored)", site(&tr, hb).inuse_bytes, 300);
	x.execs = 0;
	bpf_map_update_elem(bpf_map__fd(tr.skel->maps.totals), &(__u32){ 0 }, &x, BPF_ANY);

	/*
	 * The drain thread alone, no drain_now(): an event is accounted within
	 * 100 ms; then three rings' worth of pairs, the producer waiting on the
	 * full ring (the bell, then tail) as the stub does.
	 */
	uint64_t t0 = monotonic_ns();
	__u64 head = r.hdr->head;
	put(&r, alloc_ev(me, 0x8000, 8, 0, ha));
	while (__atomic_load_n(&r.hdr->tail, __ATOMIC_ACQUIRE) <= head && monotonic_ns() - t0 < 1000000000ull)
		usleep(1000);
	uint64_t fresh_ms = (monotonic_ns() - t0) / 1000000;
	printf("# drained by the thread after %lu ms\n", (unsigned long)fresh_ms);
	check("the drain thread accounts an event within 100 ms", fresh_ms < 100, 1);
	for (long i = 0; i < 3 * HT_RING_SLOTS / 2; i++) {
		put(&r, alloc_ev(me, 0x10000000 + i * 16, 16, 0, ha));
		put(&r, free_ev(me, 0x10000000 + i * 16));
	}
	t0 = monotonic_ns();
	while (__atomic_load_n(&r.hdr->tail, __ATOMIC_ACQUIRE) != r.hdr->head && monotonic_ns() - t0 < 5000000000ull)
		usleep(1000);
	check("full ring: every slot drained by the thread", r.hdr->tail, r.hdr->head);
	check("full ring: allocs", counter(&tr, HT_ALLOCS), 7 + 3 * HT_RING_SLOTS / 2);
	check("full ring: frees", counter(&tr, HT_FREES), 4 + 3 * HT_RING_SLOTS / 2);
	check("full ring: the producer waited", r.hdr->full_waits > 2, 1);

	/* A stack deeper than any walk (a producer's bug): passed over, never waited on. */
	static __u64 deep[200];
	for (int i = 0; i < 200; i++)
		deep[i] = 0x403000 + i;
	send_stack(&r, deep, 200, me, false);
	put(&r, alloc_ev(me, 0x20000000, 8, 0, hash_of(deep, 200)));
	drain_now(&tr);
	check("a stack of 200 frames: passed over", r.hdr->tail, r.hdr->head);
	check("a stack of 200 frames: stack_errors (it, its allocation)", counter(&tr, HT_STACK_ERRORS), 2);

	pairs(&tr, &r, me);
	carried(&tr, &r, me);
	epochs(&tr, &r, me);
	filter(&tr, &r, me);
	collisions(&tr, &r, me);

	if (argc > 1)
		cost(&tr, &r, ha, atol(argv[1]));
	check("the filter counts the live keys exactly after it all", filter_errors(&tr), 0);
	drain_unregister(&tr, &r);
	check("unregistered: ring_full_waits kept", counter(&tr, HT_RING_FULL_WAITS), (long long)r.hdr->full_waits);
	pthread_mutex_unlock(&hold);
	pthread_join(th, NULL);
	tracer_close(&tr);
	munmap(r.hdr, HT_RING_SIZE);
	close(r.fd);
	return failed;
}
