/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The event ring's layout, part of heaptrace.h (which includes it, and
 * which every side includes): what the stub writes, what heaptrace drains,
 * and the drain's per-thread state.  Not to be included alone.
 */
#ifndef HT_HEAPTRACE_RING_H
#define HT_HEAPTRACE_RING_H

/*
 * The event ring (exact mode's batching, docs/fast-path.md): the stub
 * appends each recorded event to one ring per process, in a memfd that
 * the target maps read-write and shared (data only, never executable)
 * and heaptrace maps too; heaptrace drains it (a BPF syscall program run
 * by BPF_PROG_TEST_RUN, bpf/drain.bpf.c, into the same maps and through
 * the same accounting as the record sites) every HT_RING_PERIOD_MS, or
 * sooner when a producer rings the bell.  So a recorded call costs no
 * kernel entry.  One ring per process, not per thread: the positions the
 * producers take (one atomic add) are the events' one order, so a block
 * malloc'd in one thread and freed in another is always seen allocated
 * first.
 *
 * Slots are 64 bytes.  Each has a sequence word (a bounded MPMC queue,
 * Vyukov's): slot pos % HT_RING_SLOTS is free for position pos when seq
 * == pos, published when seq == pos + 1; the consumer frees it for the
 * next lap with seq = pos + HT_RING_SLOTS.  An event is one slot; a stack
 * the process had not sent before is a HT_EV_STACK slot followed by
 * HT_RING_STACK_SLOTS(depth) slots of its frames, taken in one add, and
 * consumed only once all of them are published.
 *
 * What the stub (stub/ring.c) puts in an event: HT_EV_ALLOC's old is kept
 * only when finish_alloc's rule frees it (ptr, or size 0), so the drain
 * frees old whenever it is set; ptr 0 (a failed call) has stack 0.  An
 * HT_EV_ALLOC with HT_STUB_UNWALKED has stack 0: a signal handler's event
 * over a producer of its own thread, whose walk failed and which could not
 * wait for the record site's turn; its stack is lost, its block counted.
 * fp_frames is only in the HT_EV_STACK record (the same for every event of
 * the stack).  HT_EV_FREE has no stack.  A producer that gives up leaves
 * the position it waited for unpublished: once gave_up is set, the ring
 * ends at the first position not published.
 */
#define HT_RING_SLOTS 16384             /* 1 MiB of events: a power of two */
#define HT_RING_OFF 4096                /* the slots follow the header's page */
#define HT_RING_SIZE (HT_RING_OFF + HT_RING_SLOTS * 64)
#define HT_RING_PERIOD_MS 10            /* heaptrace drains at least this often */
#define HT_RING_PCS 7                   /* frames in a continuation slot */
#define HT_RING_STACK_SLOTS(depth) (((depth) + HT_RING_PCS - 1) / HT_RING_PCS)

enum ht_ev_kind {
	HT_EV_ALLOC = 1,        /* an allocator call returned (ptr 0: it failed); a realloc's old block in old */
	HT_EV_FREE,             /* a free of ptr, at its entry */
	HT_EV_RESET,            /* an arena reset of arena, at its entry */
	HT_EV_STACK,            /* a new stack: hash, depth, flags, fp_frames; its frames follow */
	HT_EV_SKIP,             /* a position taken but not used (the producer gave up): consumed, nothing done */
};

/* HT_EV_FREE's flags: called from the allocator's own code (from_allocator(): unmatched, a thread-exit free) */
#define HT_EV_FREE_IN_ALLOCATOR 1

/*
 * Written by heaptrace alone, into published slots it owns until tail
 * moves (user/tracer/pair.c; the stub never sets it): an HT_EV_ALLOC whose
 * block an HT_EV_FREE later in the same drain run frees, and that free,
 * whose old then holds the allocation's position.  The drain accounts such
 * a pair without the live map (bpf/drain.bpf.c).
 */
#define HT_EV_PAIRED 0x80

struct ht_ev {
	__u64 seq;
	__u8 kind;              /* enum ht_ev_kind */
	__u8 flags;             /* HT_EV_ALLOC: enum ht_stub_flags; HT_EV_FREE: HT_EV_FREE_IN_ALLOCATOR; HT_EV_STACK: HT_STACK_TRUNCATED, HT_STACK_MAX_DEPTH */
	__u16 spec;             /* the function's descriptor (index into the specs) */
	__u32 tid;              /* the thread that made the call (its per-thread state: temporary allocations) */
	union {
		struct {
			__u64 ptr;      /* the block made or freed */
			__u64 size;     /* its request size, evaluated by the stub as the BPF side would */
			__u64 old;      /* a realloc's old block (0: none) */
			__u32 objects;  /* the spec's objects expression (32 bits, as struct ht_block keeps it) */
			__u32 ticks;    /* when the call was made: HT_EV_TICKS (0: not stamped, the drain's time) */
			__u64 arena;    /* the spec's arena expression (HT_EV_RESET: the arena reset) */
			__u64 stack;    /* the hash of its stack (ht_stack_hash), sent before in an HT_EV_STACK */
		};
		struct {
			__u64 hash;     /* HT_EV_STACK: the stack's hash */
			__u32 depth;    /* its frames, in the HT_RING_STACK_SLOTS(depth) slots that follow */
			__u32 fp_frames;        /* --unwind dwarf: frames unwound by frame pointer */
		};
	};
};

/*
 * The time of an event (HT_EV_ALLOC, HT_EV_FREE, HT_EV_RESET), taken by
 * the stub at the call: the time-stamp counter's low 32 bits above
 * HT_EV_TICK_SHIFT, 21 ns a tick at 3 GHz, a lap in 91 s.  The drain turns
 * it into the kernel's monotonic time (bpf_ktime_get_ns(), the record
 * sites' clock) from a pair of both taken by heaptrace at the pass and the
 * rate it measured (struct ht_drain_ctx), so lifetimes, --min-age, the
 * peak's moment and the timeline mean the same on every path.  heaptrace
 * drains every HT_RING_PERIOD_MS: an event that waited half a lap (heaptrace
 * stopped that long, ^Z) cannot be placed, and one that seems to come
 * after its pass gets the pass's time.  The stub reads the counter only
 * where heaptrace saw the process may (ht_ring's stamp: prctl(PR_SET_TSC)
 * can forbid it).
 */
#define HT_EV_TICK_SHIFT 6
#define HT_EV_TICKS(tsc) ((__u32)((tsc) >> HT_EV_TICK_SHIFT))
/* struct ht_drain_ctx's tick_mult: nanoseconds a tick, in units of 2^-HT_TICK_MULT_SHIFT */
#define HT_TICK_MULT_SHIFT 24

/* A continuation slot of an HT_EV_STACK: the next HT_RING_PCS frames, innermost first. */
struct ht_ev_pcs {
	__u64 seq;
	__u64 pcs[HT_RING_PCS];
};

/*
 * The ring's first page.  head is the producers' (atomic add), tail
 * heaptrace's alone; each in a cache line of its own.  A producer that
 * finds its slot not yet freed (the ring is full) rings the bell and waits
 * on tail (FUTEX_WAIT, shared); heaptrace bumps alive every pass, so a
 * producer that waits HT_RING_GIVE_UP_MS without alive moving knows
 * heaptrace is gone (SIGKILL): the stub stops recording, and the target
 * runs on.  Its lost events are counted in lost (ring_lost).
 */
#define HT_RING_GIVE_UP_MS 1000

struct ht_ring {
	__u64 head __attribute__((aligned(64)));
	__u32 stamp;            /* 1: the stub stamps events (HT_EV_TICKS), set by heaptrace; read with head */
	__u32 tsc_mode;         /* the target's prctl(PR_GET_TSC), written there at the ring's making */
	__u64 tail __attribute__((aligned(64)));
	__u32 bell __attribute__((aligned(64)));     /* producers add 1 and wake heaptrace when it sleeps */
	__u32 sleeping;         /* heaptrace waits on bell */
	__u32 waiting;          /* producers wait on tail */
	__u32 alive;            /* heaptrace's passes */
	__u64 lost;             /* events not recorded: the ring stayed full while heaptrace was gone */
	__u64 gave_up;          /* 1: the stub stopped recording (heaptrace gone) */
	__u64 full_waits;       /* producers that found the ring full and waited (ring_full_waits) */
};

/*
 * What heaptrace hands bpf/drain.bpf.c's program (its context, by
 * BPF_PROG_TEST_RUN): where the ring is in heaptrace's memory, the
 * positions to consume, and whose ring it is.  The program consumes
 * published events from tail on, at most max slots, stopping at the first
 * unpublished one, and writes back how many it consumed; heaptrace frees
 * those slots and moves tail on.
 */
struct ht_drain_ctx {
	__u64 ring;             /* the ring's slots (HT_RING_OFF into the mapping) in heaptrace */
	__u64 tail;             /* the first position to consume */
	__u32 max;              /* at most this many slots */
	__u32 tgid;             /* the process the ring belongs to */
	__u32 done;             /* out: slots consumed */
	__u32 exec_gen;         /* the process's image when the ring was made: events of an older one are not live */
	/* The events' clock: the time at the pass, the ticks then, ns a tick (<< HT_TICK_MULT_SHIFT; 0: unknown) */
	__u64 clock_ns;
	__u64 clock_ticks;
	__u64 tick_mult;
	/*
	 * --interval-bytes: no allocation is consumed once the process's
	 * alloc_bytes have reached this (0: no limit), so the snapshot that
	 * heaptrace takes then holds what was allocated up to the multiple,
	 * however far ahead the program has run in the ring.
	 */
	__u64 stop_bytes;
	/*
	 * The ring's lane of the drain's pair_blocks (bpf/drain.bpf.c): a run
	 * that held back frees leaves their allocations' blocks there for the
	 * ring's next run, so each ring that holds back has a lane of its own
	 * (HT_DRAIN_LANES - 1 of them); the last lane is for the rings
	 * without one, which never hold back.
	 */
	__u64 lane;
};

#define HT_DRAIN_LANES 4

/* Or'ed into the drain's slots consumed (its retval): it stopped at stop_bytes. */
#define HT_DRAIN_AT_VOLUME (1u << 31)

/*
 * A drained event's thread, by tid (bpf/account.bpf.h's ring_threads: the
 * drain runs in heaptrace, not in the thread): its last allocation (see
 * follows_last_alloc()) and the unmatched frees the allocator's own code
 * made (HT_EV_FREE_IN_ALLOCATOR), held until the thread makes another call
 * (then unmatched_frees) or user/tracer/drain.c finds it gone
 * (thread_exit_frees; the main thread's: unmatched_frees).  In the array
 * ring_threads at tid & (HT_RING_THREAD_SLOTS - 1), tid its tag (0: a free
 * slot; no thread of a process has tid 0), or, when another thread holds
 * that slot, in the LRU hash ring_threads_over by tid.
 */
struct ht_ring_thread {
	struct ht_last_alloc last;
	__u32 held_frees;
	__u32 tgid;             /* its process, and the process's slot */
	__u32 proc;
	__u32 tid;              /* whose slot it is (the array's tag; 0: free) */
};

/*
 * ring_threads' slots: a power of two.  The array's lookup is inlined by
 * the verifier (a few ns against ~30 for a hash's), once or twice a drained
 * event.  Tids come in sequence, so 16384 threads alive at once (or a
 * gone thread's slot not yet reclaimed by drain.c) before two share one.
 */
#define HT_RING_THREAD_SLOTS 16384
#define HT_RING_THREADS_OVER 2048       /* ring_threads_over: threads whose slot another holds */

#endif /* HT_HEAPTRACE_RING_H */
