// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Each thread's last recorded allocation, for heaptrack's "temporary": in
 * task storage for a record site's thread, in the drain's thread entries
 * (by tid) for a thread whose events go through its process's ring.  Apart
 * from the accounting (account.bpf.h), which reads and sets it around
 * each allocation and free.
 */
#ifndef HT_LAST_ALLOC_BPF_H
#define HT_LAST_ALLOC_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"
#include "config.bpf.h"

/*
 * Each thread's last recorded allocation, for heaptrack's "temporary" (see
 * follows_last_alloc()).  Task storage: found from the task, freed with it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ht_last_alloc);
} last_allocs SEC(".maps");

/*
 * Drained events' threads (struct ht_ring_thread, bpf/drain.bpf.c), as a
 * record site's thread has its task storage.  Here, not in drain.bpf.c: a
 * record site of a thread whose events also go through the ring (its walk
 * failed: the ordered fallback) must see and move the same last
 * allocation, or a free after it is taken for a temporary one
 * (check-asan's temporary: pair_a 1 for 0).
 *
 * An array indexed by tid, the tid the slot's tag (its lookup is inlined:
 * the drain looks a thread up once or twice an event); a thread whose slot
 * another thread holds goes to ring_threads_over, an LRU hash (threads that
 * are gone make room), as all went before.  The drain never takes a slot
 * from its holder (it cannot tell whether a thread is alive): drain.c
 * empties the slots of threads that are gone (tgkill's ESRCH) once a
 * thread has gone to ring_threads_over (ring_held[1]), so that newcomers
 * find room.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);      /* drain.c reads the slots in place: a batched read costs ~4 ms */
	__uint(max_entries, HT_RING_THREAD_SLOTS);
	__type(key, __u32);             /* tid & (HT_RING_THREAD_SLOTS - 1) */
	__type(value, struct ht_ring_thread);
} ring_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, HT_RING_THREADS_OVER);
	__type(key, __u32);             /* tid */
	__type(value, struct ht_ring_thread);
} ring_threads_over SEC(".maps");

/*
 * Process slots whose events go through a ring (drain.c sets an entry at
 * the ring's registration, clears it when the ring goes): a record site of
 * theirs keeps a thread's last allocation where the drain keeps it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_PROCS);
	__type(key, __u32);             /* process slot */
	__type(value, __u32);           /* 1: a ring is drained */
} ring_procs SEC(".maps");

/*
 * [0]: frees held in ring_threads and ring_threads_over, in all (drain.c
 * looks at their threads when it is not 0); [1]: threads that went to
 * ring_threads_over, ever (drain.c empties the slots of gone threads when
 * it grows).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __s64);
} ring_held SEC(".maps");

static __always_inline void add_ring_held(__u32 i, __s64 n)
{
	__s64 *h = bpf_map_lookup_elem(&ring_held, &i);

	if (h)
		__sync_fetch_and_add(h, n);
}

/* tid's slot of ring_threads (whoever holds it: see its tid). */
static __always_inline struct ht_ring_thread *ring_thread_slot(__u32 tid)
{
	__u32 i = tid & (HT_RING_THREAD_SLOTS - 1);

	return bpf_map_lookup_elem(&ring_threads, &i);
}

/* The drain's entry of thread tid, if it has one: its slot, else in ring_threads_over. */
static __always_inline struct ht_ring_thread *ring_thread_find(__u32 tid)
{
	struct ht_ring_thread *t = ring_thread_slot(tid);

	if (t && t->tid == tid)
		return t;
	return bpf_map_lookup_elem(&ring_threads_over, &tid);
}

/*
 * A new entry of ring_threads_over, per CPU: built on the stack, it took
 * 40 bytes of the allocation programs' frames, in their deepest call
 * chains (512 bytes in all where BPF has no private stack); and Linux
 * 6.1's verifier inserts a value from the stack or a map, not from a
 * global function's argument.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ht_ring_thread);
} ring_thread_new SEC(".maps");

static __always_inline struct ht_ring_thread *ring_thread_new_here(void)
{
	return HT_HERE(ring_thread_new);
}

/*
 * A record site's entry for thread tid of a process whose events go
 * through a ring, which has none yet: its slot when empty (a slot another
 * thread holds, the drain alone may judge), else in ring_threads_over.
 */
static __always_inline struct ht_ring_thread *ring_thread_make(__u32 tid, __u32 tgid, __u32 proc)
{
	struct ht_ring_thread *slot = ring_thread_slot(tid);
	struct ht_ring_thread *fresh = ring_thread_new_here();

	if (!fresh)
		return NULL;
	*fresh = (struct ht_ring_thread){ .tgid = tgid, .proc = proc, .tid = tid };
	if (slot && !slot->tid) {
		*slot = *fresh;
		return slot;
	}
	/* A slot held, by a living thread or a gone one: drain.c empties the gone ones' when this grows. */
	if (slot)
		add_ring_held(1, 1);
	bpf_map_update_elem(&ring_threads_over, &tid, fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&ring_threads_over, &tid);
}

/*
 * heaptrack's "temporary": a free that comes right after an allocation of
 * the same stack and size, with no allocation or free in between.
 * heaptrack (src/analyze/accumulatedtracedata.cpp) keeps the allocation
 * info (size, trace) of the last '+' event and compares it with each '-'
 * event's, then forgets it; so it compares stack and size, not the block:
 * of 8 blocks from one line freed in order, the first free counts.  Its
 * one global event order is replaced here by each thread's own: threads
 * on different CPUs have no order the BPF programs could see without a
 * shared, contended variable, and a thread's alloc-then-free is a property
 * of its code, not of the scheduler.  Frees of blocks never recorded
 * (allocated before attaching, or not sampled) are not events here, as a
 * free of an unknown pointer is none in heaptrack's analysis.  Always
 * ends the thread's turn: the next free follows a free.
 */
static __always_inline bool follows_last_alloc(struct ht_last_alloc *l, const struct ht_block *b)
{
	if (!l || !l->set)
		return false;
	l->set = 0;
	return l->stack == b->stack && l->size == b->size;
}

/* Does proc's events go through a ring (ring_procs)?  Else its threads' state is in task storage alone. */
static __always_inline bool ring_on(__u32 proc)
{
	__u32 k = proc & (HT_MAX_PROCS - 1);
	__u32 *ring = bpf_map_lookup_elem(&ring_procs, &k);

	return ring && *ring;
}

/*
 * The current thread of process proc: its last allocation, if it has one.
 * Where the drain keeps it when proc's events go through a ring (one last
 * allocation for both paths), else in task storage: a process without a
 * ring (--no-inject, sampled) pays no lookup of the drain's threads.
 */
static __always_inline struct ht_last_alloc *current_last_alloc(__u32 proc)
{
	struct ht_ring_thread *t = ring_on(proc) ? ring_thread_find(bpf_get_current_pid_tgid()) : NULL;

	if (t)
		return &t->last;
	return bpf_task_storage_get(&last_allocs, bpf_get_current_task_btf(), 0, 0);
}

/*
 * The current thread's last allocation, made if it has none: where the
 * drain keeps it when proc's events go through a ring (a record site's
 * allocation there, a walk the stub gave up, and the ring's free after it
 * must see one last allocation: a split lost t_peak's temporary free
 * under load), else in task storage.
 */
static __always_inline struct ht_last_alloc *current_last_alloc_made(__u32 proc)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = id;
	struct ht_ring_thread *t;

	if (ring_on(proc) && ((t = ring_thread_find(tid)) || (t = ring_thread_make(tid, id >> 32, proc))))
		return &t->last;
	return bpf_task_storage_get(&last_allocs, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/*
 * The thread's allocation (even one the maps cannot hold was an allocation
 * in between, for the next free), before account_alloc(): l is the
 * thread's (current_last_alloc_made(), or a drained event's thread's).
 */
static __always_inline void set_last_alloc(struct ht_last_alloc *l, __u64 stack, __u64 size)
{
	if (!l)
		return;
	l->stack = stack;
	l->size = size;
	l->set = 1;
}

#endif /* HT_LAST_ALLOC_BPF_H */
