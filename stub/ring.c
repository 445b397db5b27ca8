// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Exact mode's batching, the producer: the events the stub records go to
 * the process's ring (bpf/heaptrace.h, "The event ring"), which heaptrace
 * drains, instead of each to a record site (a kernel entry per call).
 *
 * One ring for the process: the position a producer takes (one atomic
 * add) is its events' place in the one order heaptrace accounts them in.
 * A slot is free for position pos when its seq is pos; the producer waits
 * for that (the ring is full meanwhile), writes, and publishes seq = pos
 * + 1 with release order.  A stack the process has not sent yet goes
 * first, in the same add: a HT_EV_STACK slot and its frames.  A stack is
 * sent once per session, as far as the direct-mapped cache of sent hashes
 * remembers (a hash evicted is sent again: the drain stores it again).
 *
 * Everything here may be interrupted by a signal handler that mallocs and
 * comes back here: no locks, and nothing held across a wait but the
 * positions taken, which the handler's own events simply follow.
 */
#include "ring.h"

extern const struct stub_cfg stub_cfg __attribute__((visibility("hidden")));
extern struct stub_data stub_data __attribute__((visibility("hidden")));

#define SYS_gettid 186
#define SYS_futex 202
#define SYS_clock_gettime 228
#define FUTEX_WAIT 0            /* not _PRIVATE: the ring is shared with heaptrace */
#define FUTEX_WAKE 1
#define CLOCK_MONOTONIC 1
#define MASK (HT_RING_SLOTS - 1)
#define QUARTER (HT_RING_SLOTS / 4)
#define SENT_MASK ((1u << STUB_SENT_BITS) - 1)
#define WORDS 7                 /* a slot's words after seq */

_Static_assert(sizeof(struct ht_ev) == 64 && sizeof(struct ht_ev_pcs) == 64, "a slot is 64 bytes");

struct ts {
	long sec, nsec;
};

static long sys4(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return ret;
}

static __u64 now_ms(void)
{
	struct ts t = { 0, 0 };

	sys4(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t, 0, 0);
	return (__u64)t.sec * 1000 + (__u64)t.nsec / 1000000;
}

/*
 * The calling thread's kernel id, for its per-thread state on the BPF
 * side (temporary allocations).  A system call per event would cost more
 * than the rest of it: heaptrace finds where the thread's libc keeps it,
 * from the thread pointer (glibc's struct pthread at 0x2d0, musl's at
 * 0x30), checked against every thread it stopped; one load then.
 */
static __u32 tid(void)
{
	__u64 off = __atomic_load_n(&stub_data.r.tid_off, __ATOMIC_RELAXED);
	__u32 t = 0;

	if (off)
		__asm__("movl %%fs:(%1), %0" : "=r"(t) : "r"(off));
	return t ? t : (__u32)sys4(SYS_gettid, 0, 0, 0, 0);
}

/* The event's time (HT_EV_TICKS): the time-stamp counter, no kernel entry. */
static __u32 ticks(void)
{
	__u32 lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return HT_EV_TICKS((__u64)hi << 32 | lo);
}

static struct ht_ev *slot(struct ht_ring *h, __u64 pos)
{
	return (struct ht_ev *)((char *)h + HT_RING_OFF) + (pos & MASK);
}

/* Wake heaptrace's drain if it sleeps (a seq_cst add, then the load: its sleeping store is seq_cst too). */
static void bell(struct ht_ring *h)
{
	__atomic_add_fetch(&h->bell, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&h->sleeping, __ATOMIC_SEQ_CST))
		sys4(SYS_futex, (long)&h->bell, FUTEX_WAKE, 1, 0);
}

static void lose(struct ht_ring *h)
{
	__atomic_add_fetch(&h->lost, 1, __ATOMIC_RELAXED);
}

struct waiter {
	__u32 alive;
	__u64 since;            /* when alive was last seen to move; 0: not yet looked */
};

/*
 * One wait of at most HT_RING_PERIOD_MS for tail to move from t, the bell
 * rung first.  -1: heaptrace's passes (alive) stood still for
 * HT_RING_GIVE_UP_MS: it is gone, the stub gives up recording for good.
 */
static int wait_tail(struct ht_ring *h, struct waiter *w, __u64 t)
{
	struct ts to = { 0, HT_RING_PERIOD_MS * 1000000l };

	bell(h);
	__atomic_add_fetch(&h->waiting, 1, __ATOMIC_SEQ_CST);
	/* The low half of tail: it moves with every pass that consumes anything. */
	sys4(SYS_futex, (long)&h->tail, FUTEX_WAIT, (__u32)t, (long)&to);
	__atomic_sub_fetch(&h->waiting, 1, __ATOMIC_RELAXED);
	__u32 a = __atomic_load_n(&h->alive, __ATOMIC_ACQUIRE);
	__u64 now = now_ms();
	if (!w->since || a != w->alive) {
		w->alive = a;
		w->since = now;
		return 0;
	}
	if (now - w->since < HT_RING_GIVE_UP_MS)
		return 0;
	__atomic_store_n(&h->gave_up, 1, __ATOMIC_RELEASE);
	bell(h);
	return -1;
}

/*
 * Wait until pos's slot is free.  -1: not to be written: heaptrace is
 * gone (the stub gave up), or a new session reset the ring past pos
 * (tail beyond a position never published: it was skipped).
 */
static int wait_free(struct ht_ring *h, struct ht_ev *s, __u64 pos)
{
	struct waiter w = { 0, 0 };
	int counted = 0;

	for (;;) {
		__u64 t = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == pos)
			return 0;
		if (t > pos || __atomic_load_n(&h->gave_up, __ATOMIC_ACQUIRE))
			return -1;
		if (!counted++)
			__atomic_add_fetch(&h->full_waits, 1, __ATOMIC_RELAXED);
		if (wait_tail(h, &w, t))
			return -1;
	}
}

/* Write a slot's words after seq and publish it.  -1: not written (wait_free). */
static int put_slot(struct ht_ring *h, __u64 pos, const __u64 *words)
{
	struct ht_ev *s = slot(h, pos);
	__u64 *d = (__u64 *)s + 1;

	if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos && wait_free(h, s, pos))
		return -1;
	/* Atomic stores, relaxed: the compiler makes no memcpy call of them (the stub has no libc). */
	for (int i = 0; i < WORDS; i++)
		__atomic_store_n(&d[i], words[i], __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Positions taken but not to be used: HT_EV_SKIP, so the drain passes them. */
static void skip(struct ht_ring *h, __u64 pos, __u32 n)
{
	struct ht_ev e = { .kind = HT_EV_SKIP };

	for (__u32 i = 0; i < n; i++)
		if (put_slot(h, pos + i, (const __u64 *)&e + 1))
			return;
}

/*
 * An event the stub cannot put in the ring (its walk failed: the BPF side
 * walks at the record site): everything taken before it is drained first,
 * so that it comes in its place.  1: the caller goes to the site; 0: the
 * stub gave up meanwhile (counted).
 */
static int ordered(struct ht_ring *h)
{
	__u64 until = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	struct waiter w = { 0, 0 };

	for (;;) {
		__u64 t = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
		if (t >= until)
			return 1;
		if (__atomic_load_n(&h->gave_up, __ATOMIC_ACQUIRE) || wait_tail(h, &w, t)) {
			lose(h);
			return 0;
		}
	}
}

struct ht_ring *ring_of(void)
{
	return (struct ht_ring *)__atomic_load_n(&stub_data.r.ring, __ATOMIC_ACQUIRE);
}

/* The stack's slots: HT_EV_STACK, then its frames HT_RING_PCS a slot.  -1: given up. */
static int put_stack(struct ht_ring *h, __u64 pos, const struct ht_stub_stack *st, __u32 tid)
{
	struct ht_ev e = { .kind = HT_EV_STACK, .flags = (__u8)st->flags, .tid = tid };
	__u64 pcs[WORDS];

	e.hash = st->hash;
	e.depth = st->depth;
	e.fp_frames = st->fp_frames;
	if (put_slot(h, pos++, (const __u64 *)&e + 1))
		return -1;
	for (__u32 i = 0; i < st->depth && i < HT_MAX_STACK_DEPTH; i += HT_RING_PCS) {
		for (__u32 j = 0; j < HT_RING_PCS; j++)
			pcs[j] = i + j < st->depth && i + j < HT_MAX_STACK_DEPTH ? st->pcs[i + j] : 0;
		if (put_slot(h, pos++, pcs))
			return -1;
	}
	return 0;
}

/*
 * The calling thread's slot in busy[]; *outer: the lowest position (+ 1)
 * that a level of this thread it interrupted holds (0: none).  A handler
 * runs between two instructions of the level it interrupted, which does
 * not run meanwhile: what that level's slot says stays true until the
 * handler returns.
 */
static struct stub_busy *busy_claim(__u64 tp, __u64 *outer)
{
	__u32 h = ht_stub_depth_hash(tp);
	struct stub_busy *mine = 0;

	*outer = 0;
	for (__u32 i = 0; i < STUB_BUSY_PROBES; i++) {
		struct stub_busy *b = &stub_data.r.busy[(h + i) % STUB_BUSY_SLOTS];
		__u64 t = __atomic_load_n(&b->tp, __ATOMIC_RELAXED), free_tp = 0;
		if (t == tp) {
			__u64 p = __atomic_load_n(&b->pos, __ATOMIC_RELAXED);
			if (p && (!*outer || p < *outer))
				*outer = p;
		} else if (!t && !mine &&
			   __atomic_compare_exchange_n(&b->tp, &free_tp, tp, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			mine = b;
		}
	}
	return mine;
}

static void busy_release(struct stub_busy *b)
{
	if (b) {
		__atomic_store_n(&b->pos, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->tp, 0, __ATOMIC_RELEASE);
	}
}

/*
 * Positions for n slots.  A handler over a level holding outer - 1 takes
 * them only where no wait for a free slot can depend on that level's
 * slot (less than a lap past it): else -1, the event is lost (counted).
 */
static int reserve(struct ht_ring *h, __u32 n, struct stub_busy *me, __u64 outer, __u64 *pos)
{
	__u64 hd = __atomic_load_n(&h->head, __ATOMIC_RELAXED);

	/* Published before the add: a handler of ours that comes in between sees at most this. */
	if (me)
		__atomic_store_n(&me->pos, hd + 1, __ATOMIC_RELAXED);
	if (!outer) {
		*pos = __atomic_fetch_add(&h->head, n, __ATOMIC_ACQ_REL);
	} else {
		do {
			if (hd + n > outer - 1 + HT_RING_SLOTS)
				return -1;
		} while (!__atomic_compare_exchange_n(&h->head, &hd, hd + n, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
		*pos = hd;
	}
	if (me)
		__atomic_store_n(&me->pos, *pos + 1, __ATOMIC_RELAXED);
	return 0;
}

static int put(struct ht_ev *ev, const struct stub_regs *regs, __u64 tp, struct stub_busy *me, __u64 outer)
{
	struct ht_stub_stack st;
	int walked = 0;

	ev->tid = tid();
	/* More than one try only when a new session began in between (every thread stopped meanwhile). */
	for (int tries = 0; tries < 4; tries++) {
		__u32 epoch = __atomic_load_n(&stub_data.r.epoch, __ATOMIC_ACQUIRE);
		struct ht_ring *h = ring_of();
		if (!h)
			return 1;
		if (__atomic_load_n(&h->gave_up, __ATOMIC_ACQUIRE)) {
			lose(h);
			return 0;
		}
		if (!tries && __atomic_load_n(&h->stamp, __ATOMIC_RELAXED))
			ev->ticks = ticks();
		if (regs && !walked) {
			if (!stub_walk(regs, tp, &st, ev->kind == HT_EV_ALLOC)) {
				walked = 1;
				ev->stack = st.hash;
			} else if (!outer) {
				return ordered(h);
			} else if (st.depth) {
				/*
				 * A handler over a producer of its thread cannot wait for
				 * the ring to drain: it keeps the frames the walk proved
				 * (its own, up to the frame it interrupted, in the stub),
				 * truncated there, as the BPF walk truncates where it
				 * cannot read on; its block is counted exactly.
				 */
				st.flags |= HT_STACK_TRUNCATED;
				stub_hash_frames(&st);  /* stub_walk hashes only a whole walk */
				walked = 1;
				ev->stack = st.hash;
			} else {
				/* Not a frame proved: no stack at all (the drain counts it lost). */
				ev->flags |= HT_STUB_UNWALKED;
				ev->stack = 0;
				regs = 0;
			}
		}
		__u64 *sent = walked ? &stub_data.r.sent[st.hash & SENT_MASK] : 0;
		__u32 n = sent && __atomic_load_n(sent, __ATOMIC_ACQUIRE) != st.hash ? 2 + HT_RING_STACK_SLOTS(st.depth) : 1;
		__u64 pos;
		if (reserve(h, n, me, outer, &pos)) {
			lose(h);
			return 0;
		}
		/*
		 * A new session between the looks above and the add: the cache
		 * may have spoken of the old one's stacks.  Positions of the new
		 * session's are passed over (SKIP), and the event goes again.
		 */
		if (__atomic_load_n(&stub_data.r.epoch, __ATOMIC_ACQUIRE) != epoch) {
			skip(h, pos, n);
			continue;
		}
		/* Marked after the add: whoever finds it marked takes a later position than the stack's. */
		if (n > 1)
			__atomic_store_n(sent, st.hash, __ATOMIC_RELEASE);
		/* A quarter more of the ring in use: the drain, if it sleeps, comes now rather than at its period. */
		__u64 t = __atomic_load_n(&h->tail, __ATOMIC_RELAXED);
		if (pos >= t && (pos - t) / QUARTER != (pos + n - t) / QUARTER)
			bell(h);
		if ((n > 1 && put_stack(h, pos, &st, ev->tid)) || put_slot(h, pos + n - 1, (const __u64 *)ev + 1))
			lose(h);
		return 0;
	}
	return 1;
}

int ring_put(struct ht_ev *ev, const struct stub_regs *regs, __u64 tp)
{
	/* A recorded call (stub.h's stub_counters.recorded, as the record sites note theirs). */
	if (!stub_data.c.recorded)
		stub_data.c.recorded = 1;
	__u64 outer;
	struct stub_busy *me = busy_claim(tp, &outer);
	int rc = put(ev, regs, tp, me, outer);

	busy_release(me);
	return rc;
}
