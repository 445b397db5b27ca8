// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --mmap: the anonymous mappings (mmap, munmap, mremap) and the program
 * break (brk) of the traced processes, as blocks of their own kind in the
 * same live map and counters as allocations (account.bpf.h), so that
 * in-use, peak, --min-age, growth and the limits see them.  A block is a
 * range: the live map holds it at its start (HT_BLOCK_MAP), and map_ranges
 * holds its end, so that a munmap of part of it finds it.  The rules
 * (docs/mmap.md):
 *
 * - a mapping is a block of its length (page-rounded), under the stack of
 *   the call, its innermost frame HT_PC_KIND(HT_MAP_MMAP); a brk growth
 *   is a block of the break's rise, under HT_PC_KIND(HT_MAP_BRK);
 * - munmap, a brk fall and MAP_FIXED take the range off whatever blocks it
 *   covers: a block wholly inside is freed, one partly inside keeps its
 *   other piece(s), with its stack and age (its object stays with the
 *   piece at its start, or the first piece after it);
 * - mremap is realloc: the old range goes, the new one is a block of the
 *   call's stack, if the old one held a block (else it was no anonymous
 *   mapping of ours: made before tracing, or file-backed);
 * - the allocator's own mappings are not counted (allocator_maps): the
 *   thread is inside a traced allocator call that heaptrace sees (the
 *   uprobes' call state, the stub's nesting table), or the caller of the
 *   syscall's wrapper (of sbrk's, for brk) is in the malloc family's
 *   object, when that object is a library of its own.  The second rule
 *   needs the CFI walk (--sample-rate, where unsampled calls leave no
 *   state, requires it in user space).
 */
#ifndef HT_MAPS_BPF_H
#define HT_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include "heaptrace.h"
#include "config.bpf.h"
#include "counters.bpf.h"
#include "account.bpf.h"
#include "calls.bpf.h"
#include "stack.bpf.h"

/* x86-64 system call numbers and flags (uapi: the kernel's ABI). */
#define NR_MMAP 9
#define NR_MUNMAP 11
#define NR_BRK 12
#define NR_MREMAP 25
#define MAP_FIXED_ 0x10
#define MAP_ANONYMOUS_ 0x20
#define MREMAP_DONTUNMAP_ 4

/* Each mapping block's end, by its live key (sized by the loader: 1 without --mmap). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} map_ranges SEC(".maps");

/*
 * A process heaptrace is making system calls in (the stub's mappings:
 * user/inject/), 0: none.  A section of its own: alloc_session.bpf.c's
 * globals must sit where this object has them (tracer.c: same_globals).
 */
volatile __u32 remote_tgid SEC(".data.maps") = 0;

/* The break when a thread entered brk(): the growth is from there to what brk returns. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} map_brk SEC(".maps");

static __always_inline __u64 page_up(__u64 n)
{
	return (n + page_size - 1) & ~(page_size - 1);
}

/* A piece of a cut block, back into the live map and its stack's in-use, and its range indexed. */
static __always_inline void put_piece(__u64 start, __u64 size, const struct ht_block *orig, __u32 objects, __u32 proc)
{
	/* The piece and the block it may replace: alloc_work's (no allocation is accounted meanwhile). */
	struct alloc_work *w = alloc_work_here();
	struct ht_block *p = w ? &w->b : NULL, *stale = w ? &w->stale : NULL;
	__u64 key = ht_live_key(start, proc), end = start + size;

	if (!p || !stale)
		return;
	*p = *orig;
	*stale = (struct ht_block){};
	p->size = size;
	p->objects = objects;
	int put = live_put(key, p, stale);
	if (put == LIVE_FULL) {
		count(proc, HT_LIVE_MAP_FULL);
		return;
	}
	if (put == LIVE_REPLACED)
		release(stale, key, proc);
	struct ht_site_key sk = { .stack = p->stack, .proc = proc };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &sk);
	if (s) {
		struct inuse_delta d = block_delta(p, 1);
		site_inuse(s, proc, &d);
	}
	if (bpf_map_update_elem(&map_ranges, &key, &end, BPF_ANY))
		count(proc, HT_MAP_INDEX_LOST);
}

/*
 * The range [lo, hi) leaves the block at key (which ends at end): freed if
 * it is wholly inside, else cut to what is left.  A global function: the
 * verifier checks it once.  1 if a block was there.
 */
__noinline int cut_block(__u64 key, __u64 end, __u64 lo, __u64 hi, __u32 proc)
{
	__u32 level;
	struct ht_block b;
	struct ht_block *live = live_find(&key, &level);

	bpf_map_delete_elem(&map_ranges, &key);
	/* Not a mapping's block (its range ended unseen and the address came back): not ours. */
	if (!live || !(live->flags & HT_BLOCK_MAP) || live_take(key, &b))
		return 0;
	__u64 start = key ^ ((__u64)proc << 56);
	bool temporary = follows_last_alloc(current_last_alloc(proc), &b);
	if (!release(&b, key, proc))
		return 1;
	if (lo <= start && hi >= end) {
		record_free(&b, proc, temporary, 0);
		count(proc, HT_FREES);
		return 1;
	}
	if (start < lo)
		put_piece(start, lo - start, &b, b.objects, proc);
	if (hi < end)
		put_piece(hi, end - hi, &b, start < lo ? 0 : b.objects, proc);
	return 1;
}

/* Blocks found overlapping a range, per pass over map_ranges. */
#define RANGE_SCAN 8

struct range_scan {
	__u64 lo, hi;
	__u64 keys[RANGE_SCAN], ends[RANGE_SCAN];
	__u32 proc, n;
	__u32 more;             /* a pass found more than RANGE_SCAN */
	__u32 cut;              /* blocks cut or freed in all */
};

/*
 * unmap_range()'s scan, per CPU: on the stack (a callback's context must
 * be) it took 160 of the 512 bytes map_exit's deepest call chain has where
 * the kernel gives BPF no private stack.  Its callbacks find it here.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct range_scan);
} range_scans SEC(".maps");

static __always_inline struct range_scan *range_scan_here(void)
{
	return HT_HERE(range_scans);
}

static long range_overlap(struct bpf_map *map, __u64 *key, __u64 *end, void *unused)
{
	struct range_scan *r = range_scan_here();

	if (!r)
		return 1;
	__u64 start = *key ^ ((__u64)r->proc << 56);
	__u32 i = r->n;

	if (ht_live_key_proc(*key) != r->proc || start >= r->hi || *end <= r->lo)
		return 0;
	if (i >= RANGE_SCAN) {
		r->more = 1;
		return 1;
	}
	r->keys[i & (RANGE_SCAN - 1)] = *key;
	r->ends[i & (RANGE_SCAN - 1)] = *end;
	r->n = i + 1;
	return 0;
}

/* One pass: find up to RANGE_SCAN blocks the range overlaps, cut them; 1 (stop) when none are left. */
static long range_pass(__u32 pass, void *unused)
{
	struct range_scan *r = range_scan_here();

	if (!r)
		return 1;
	r->n = 0;
	r->more = 0;
	bpf_for_each_map_elem(&map_ranges, range_overlap, NULL, 0);
	for (__u32 i = 0; i < RANGE_SCAN; i++) {
		if (i >= r->n)
			break;
		r->cut += cut_block(r->keys[i], r->ends[i], r->lo, r->hi, r->proc);
	}
	return r->more ? 0 : 1;
}

#define RANGE_PASSES 16

/* [lo, hi) is unmapped: every block it overlaps is freed or cut.  The number of blocks it met. */
static __always_inline __u32 unmap_range(__u32 proc, __u64 lo, __u64 hi)
{
	struct range_scan *r = range_scan_here();

	if (hi <= lo || !r)
		return 0;
	*r = (struct range_scan){ .lo = lo, .hi = hi, .proc = proc };
	bpf_loop(RANGE_PASSES, range_pass, NULL, 0);
	/* More than RANGE_PASSES * RANGE_SCAN blocks in one range: the rest stay in use. */
	if (r->more)
		count(proc, HT_MAP_INDEX_LOST);
	return r->cut;
}

/* The malloc family's object, if it is a library of its own: its table's first row and its code (ELF). */
struct alloc_object {
	__u64 lo, hi;
	__u32 row_begin;
	bool known;
};

static __always_inline struct alloc_object allocator_object(void)
{
	struct alloc_object a = {};
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 exe = BPF_CORE_READ(task, mm, exe_file, f_inode, i_ino);

	for (int i = 0; i < HT_MAX_SPECS; i++) {
		const volatile struct ht_alloc_spec *s = spec_of(i);
		if (!s->text_hi)
			continue;
		struct ht_unwind_object_key k = { .dev = s->obj_dev, .ino = s->obj_ino };
		struct ht_unwind_object *o = bpf_map_lookup_elem(&unwind_objects, &k);
		/* In the executable, the program's own mappings would be the allocator's too. */
		if (o && s->obj_ino != exe) {
			a.lo = s->text_lo;
			a.hi = s->text_hi;
			a.row_begin = o->row_begin;
			a.known = true;
		}
		break;
	}
	return a;
}

/* Is the return address ra in the allocator's object (its mapping in the process's cache of code)? */
static __always_inline bool in_allocator(__u32 proc, __u64 ra, const struct alloc_object *a)
{
	struct ht_unwind_proc *up = bpf_map_lookup_elem(&unwind_procs, &proc);
	int k = ra ? module_index(proc, ra - 1, 0, 0) : -1;

	if (!up || k < 0)
		return false;
	struct ht_unwind_module *m = &up->mods[k & (HT_UNWIND_MAX_MODULES - 1)];
	__u64 rel = ra - 1 - m->bias;
	return m->ready && m->row_count && m->row_begin == a->row_begin && rel >= a->lo && rel < a->hi;
}

/* A mapping call, as map_stack() sees it. */
struct map_rec {
	__u64 ip, sp, fp;
	__u64 stack;            /* out: the stack's hash */
	__u32 proc, kind;
};

/* Per CPU, not on map_exit's stack: its frame is in its deepest call chain (512 bytes in all). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct map_rec);
} map_recs SEC(".maps");

/*
 * The stack of a mapping call, stored with its kind in place of frame 0;
 * 1 (nothing stored) if the call is the allocator's, by its caller's
 * object (see the top), else 0.  A global function, checked once.
 */
__noinline int map_stack(struct map_rec *r)
{
	struct scratch *sc = scratch_here();

	if (!r || !sc)
		return 0;
	__u64 walked;   /* frame 0 is replaced below: store_stack hashes them again */

	sc->st.flags = 0;
	sc->st.depth = stack_mode == HT_STACK_DWARF ? dwarf_stack(r->ip, r->sp, r->fp, sc, r->proc, 0, 0, &walked) :
						       walk_stack(r->ip, r->sp, r->fp, sc, &walked);
	if (stack_mode == HT_STACK_DWARF && sc->st.depth > 1) {
		struct alloc_object a = allocator_object();
		/* brk's wrapper is called by sbrk's (glibc's malloc grows the heap through sbrk too). */
		if (a.known && in_allocator(r->proc, sc->st.pcs[1], &a) &&
		    (r->kind != HT_MAP_BRK || (sc->st.depth > 2 && in_allocator(r->proc, sc->st.pcs[2], &a))))
			return 1;
	}
	if (sc->st.depth)
		sc->st.pcs[0] = HT_PC_KIND(r->kind);
	r->stack = store_stack(sc, r->proc);
	return 0;
}

/* Is the thread inside a traced allocator call (entered above sp) that heaptrace sees? */
static __always_inline bool in_allocator_call(__u64 sp)
{
	struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);

	return (c && c->depth && sp <= c->sp) || in_stub_call(sp);
}

/*
 * A new block of kind for [start, start + size), made by the current call
 * (registers at the syscall), unless it is the allocator's; reallocs: 1
 * for mremap.  With --sample-rate, sampled as an allocation of its size.
 */
static __always_inline void map_block(__u32 proc, struct pt_regs *regs, __u64 start, __u64 size, __u32 kind,
				      __u64 reallocs)
{
	struct map_rec *m = HT_HERE(map_recs);

	if (!size || !m)
		return;
	*m = (struct map_rec){ .ip = BPF_CORE_READ(regs, ip), .sp = BPF_CORE_READ(regs, sp),
			       .fp = BPF_CORE_READ(regs, bp), .proc = proc, .kind = kind };
	/* The allocator's or not, first: allocator_maps counts each of its calls, sampled or not. */
	if (map_stack(m)) {
		count(proc, HT_ALLOCATOR_MAPS);
		return;
	}
	if (sample_rate) {
		struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0,
							 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!c) {
			count(proc, HT_CALL_MAP_FULL);
			return;
		}
		if (!sample(c, size))
			return;
	}
	struct alloc_rec *r = alloc_rec_here();
	count(proc, HT_MAPS);
	set_last_alloc(current_last_alloc_made(proc), m->stack, size);
	if (!r)
		return;
	*r = (struct alloc_rec){ .stack = m->stack, .ptr = start, .size = size, .objects = 1, .reallocs = reallocs,
				 .proc = proc, .flags = HT_BLOCK_MAP };
	if (!account_alloc(r))
		return;
	__u64 key = ht_live_key(start, proc), end = start + size;
	if (bpf_map_update_elem(&map_ranges, &key, &end, BPF_ANY))
		count(proc, HT_MAP_INDEX_LOST);
}

/* A brk() is entering: the break it starts from. */
static __always_inline void map_enter_brk(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 *at = bpf_task_storage_get(&map_brk, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (at)
		*at = BPF_CORE_READ(task, mm, brk);
}

/* A mapping call returned ret (an address, or -errno). */
static __always_inline void map_exit_call(__u32 proc, int nr, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 a1 = BPF_CORE_READ(regs, di), a2 = BPF_CORE_READ(regs, si), a3 = BPF_CORE_READ(regs, dx);
	__u64 a4 = BPF_CORE_READ(regs, r10), sp = BPF_CORE_READ(regs, sp);

	if ((unsigned long)ret >= (unsigned long)-4095 || bpf_get_current_pid_tgid() >> 32 == remote_tgid)
		return;
	if (nr == NR_BRK) {
		__u64 *at = bpf_task_storage_get(&map_brk, task, 0, 0);
		__u64 old = at ? *at : 0;
		if (!old || (__u64)ret == old)
			return;
		if (in_allocator_call(sp)) {
			count(proc, HT_ALLOCATOR_MAPS);
			return;
		}
		if ((__u64)ret > old)
			map_block(proc, regs, old, ret - old, HT_MAP_BRK, 0);
		else
			unmap_range(proc, ret, old);
		return;
	}
	if (nr == NR_MMAP && !(a4 & MAP_ANONYMOUS_) && !(a4 & MAP_FIXED_))
		return;         /* a file's mapping, over no range of ours */
	if (in_allocator_call(sp)) {
		count(proc, HT_ALLOCATOR_MAPS);
		return;
	}
	if (nr == NR_MUNMAP) {
		unmap_range(proc, a1, a1 + page_up(a2));
	} else if (nr == NR_MMAP) {
		/* MAP_FIXED replaces what was there. */
		if (a4 & MAP_FIXED_)
			unmap_range(proc, ret, ret + page_up(a2));
		if (a4 & MAP_ANONYMOUS_)
			map_block(proc, regs, ret, page_up(a2), HT_MAP_MMAP, 0);
	} else if (nr == NR_MREMAP) {
		/* MREMAP_DONTUNMAP (private anonymous only) leaves the old range mapped: a new block beside it. */
		if (a4 & MREMAP_DONTUNMAP_)
			map_block(proc, regs, ret, page_up(a3), HT_MAP_MMAP, 0);
		/* Else realloc: a block only where the old range held one (an anonymous mapping of ours). */
		else if (unmap_range(proc, a1, a1 + page_up(a2)))
			map_block(proc, regs, ret, page_up(a3), HT_MAP_MMAP, 1);
	}
}

#endif /* HT_MAPS_BPF_H */
