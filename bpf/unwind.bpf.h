// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --unwind dwarf: a CFI walk over tables that user space builds from every
 * object's .eh_frame (rows, objects, each process's code mappings).  It is
 * apart from stack.bpf.h because the default walks need none of it, and
 * because its shape is set by the verifier: searches as bpf_loop callbacks
 * and global functions, caches to keep those searches rare.  module_index
 * and row_index are global functions defined in this header, so it belongs
 * in one object only (heaptrace.bpf.c's).
 */
#ifndef HT_UNWIND_BPF_H
#define HT_UNWIND_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "heaptrace.h"
#include "config.bpf.h"
#include "counters.bpf.h"
#include "scratch.bpf.h"
#include "sigframe.bpf.h"

/* --unwind dwarf: every object's CFI rows, one array (sized and filled by user space, mmapped). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ht_unwind_row);
} unwind_rows SEC(".maps");

/* Not preallocated: a process maps tens of objects, not thousands. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct ht_unwind_object_key);
	__type(value, struct ht_unwind_object);
} unwind_objects SEC(".maps");

/* Per process slot: the code mappings its stacks have met. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ht_unwind_proc);
} unwind_procs SEC(".maps");

/* The state of a CFI walk between frames (bpf_loop's context). */
static __always_inline int read_stack(const struct scratch *sc, const struct unwind *u, __u64 addr, __u64 *out)
{
	__u64 off = addr - u->sp0;

	if (addr >= u->sp0 && off + 8 <= u->copied && !(off & 7)) {
		*out = sc->copy[(off >> 3) & (HT_STACK_COPY_BYTES / 8 - 1)];
		return 0;
	}
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
}

static long vma_found(struct task_struct *task, struct vm_area_struct *vma, void *unused)
{
	struct scratch *sc = scratch_here();
	struct vma_info *v = sc ? &sc->vma : NULL;
	struct file *f = BPF_CORE_READ(vma, vm_file);

	if (!v)
		return 0;

	v->start = BPF_CORE_READ(vma, vm_start);
	v->end = BPF_CORE_READ(vma, vm_end);
	v->pgoff = BPF_CORE_READ(vma, vm_pgoff);
	if (f) {
		v->file = true;
		v->key.ino = BPF_CORE_READ(f, f_inode, i_ino);
		v->key.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	}
	return 0;
}

/* A code address the process's cache does not know: find its mapping and object, and cache them. */
static __always_inline int insert_module(struct ht_unwind_proc *up, __u64 start, __u64 end, __u64 bias,
					 const struct ht_unwind_object *o)
{
	__u32 i = __sync_fetch_and_add(&up->n, 1) & (HT_UNWIND_MAX_MODULES - 1);
	struct ht_unwind_module *m = &up->mods[i];

	m->ready = 0;
	m->start = start;
	m->end = end;
	m->bias = o ? bias : 0;
	m->row_begin = o ? o->row_begin : 0;
	m->row_count = o ? o->row_count : 0;
	m->ready = 1;
	return i;
}

/*
 * Code whose place needs no lookup of the mappings: the executable (the
 * kernel keeps its code range in the mm) and the object of the probe that
 * fired (its address in the process gives the object's load bias).  These
 * hold most frames of most stacks, and bpf_find_vma cannot be relied on:
 * it only try-locks the mmap lock, and fails (-EBUSY) for as long as other
 * threads map memory, as a threaded program starting up does all the time.
 */
static __always_inline int known_module(struct ht_unwind_proc *up, __u64 pc, __u64 func_ip, __u32 spec)
{
	struct mm_struct *mm = BPF_CORE_READ(bpf_get_current_task_btf(), mm);
	__u64 start = BPF_CORE_READ(mm, start_code), end = BPF_CORE_READ(mm, end_code);
	struct ht_unwind_object *o;

	if (pc >= start && pc < end) {
		struct ht_unwind_object_key k = { .dev = BPF_CORE_READ(mm, exe_file, f_inode, i_sb, s_dev),
						  .ino = BPF_CORE_READ(mm, exe_file, f_inode, i_ino) };
		o = bpf_map_lookup_elem(&unwind_objects, &k);
		if (o)
			return insert_module(up, start, end, start - o->text_lo, o);
	}
	const volatile struct ht_alloc_spec *s = spec_of(spec);
	if (!func_ip || !s->obj_ino)
		return -1;
	struct ht_unwind_object_key k = { .dev = s->obj_dev, .ino = s->obj_ino };
	o = bpf_map_lookup_elem(&unwind_objects, &k);
	if (!o)
		return -1;
	__u64 bias = func_ip - s->probe_vaddr;
	if (pc < bias + o->text_lo || pc >= bias + o->text_hi)
		return -1;
	return insert_module(up, bias + o->text_lo, bias + o->text_hi, bias, o);
}

static __always_inline int add_module(struct ht_unwind_proc *up, __u64 pc)
{
	struct scratch *sc = scratch_here();
	struct vma_info *v = sc ? &sc->vma : NULL;

	if (!v)
		return -1;
	v->file = false;
	/* -EBUSY when the mmap lock is contended: this frame falls back to rbp, nothing is cached. */
	if (bpf_find_vma(bpf_get_current_task_btf(), pc, vma_found, NULL, 0) || !v->file)
		return -1;

	struct ht_unwind_object *o = bpf_map_lookup_elem(&unwind_objects, &v->key);
	return insert_module(up, v->start, v->end, o ? v->start - v->pgoff * page_size - o->delta : 0, o);
}

/*
 * The searches run as bpf_loop callbacks: verified once, where unrolled
 * loops nested in the frame loop would exceed the verifier's budget.
 * module_index()'s search state is in the scratch (struct scratch's ms).
 */

/* Does m (a module of the process's cache, ready or not) hold pc? */
static __always_inline bool module_holds(const struct ht_unwind_module *m, __u64 pc)
{
	return m->ready && pc >= m->start && pc < m->end;
}

static long module_step(__u32 k, void *unused)
{
	struct scratch *sc = scratch_here();
	struct module_search *s = sc ? &sc->ms : NULL;
	struct ht_unwind_proc *up = s ? bpf_map_lookup_elem(&unwind_procs, &s->proc) : NULL;

	if (!up || k >= s->n)
		return 1;
	struct ht_unwind_module *m = &up->mods[k & (HT_UNWIND_MAX_MODULES - 1)];
	if (module_holds(m, s->pc)) {
		s->found = k & (HT_UNWIND_MAX_MODULES - 1);
		return 1;
	}
	return 0;
}

/*
 * The searches are global functions: the verifier checks each once, on its
 * own, instead of inside every path of the frame loop (a third of the load
 * time otherwise).  Their arguments are plain numbers for that reason.
 */

/* The index of pc's module in the process's cache, added if new; -1: none. */
__noinline int module_index(__u32 proc, __u64 pc, __u64 func_ip, __u32 spec)
{
	struct ht_unwind_proc *up = bpf_map_lookup_elem(&unwind_procs, &proc);
	struct scratch *sc = scratch_here();

	if (!up || !sc)
		return -1;
	struct module_search *s = &sc->ms;
	*s = (struct module_search){ .proc = proc, .pc = pc, .found = -1,
				     .n = up->n < HT_UNWIND_MAX_MODULES ? up->n : HT_UNWIND_MAX_MODULES };
	bpf_loop(HT_UNWIND_MAX_MODULES, module_step, NULL, 0);
	if (s->found >= 0)
		return s->found;
	int k = known_module(up, pc, func_ip, spec);
	return k >= 0 ? k : add_module(up, pc);
}

static __always_inline struct ht_unwind_module *find_module(struct ht_unwind_proc *up, struct unwind *u,
							    __u64 pc)
{
	struct ht_unwind_module *m = &up->mods[u->last & (HT_UNWIND_MAX_MODULES - 1)];

	if (module_holds(m, pc))
		return m;
	__u32 last = u->last;
	m = &up->mods[u->other & (HT_UNWIND_MAX_MODULES - 1)];
	if (module_holds(m, pc)) {
		u->last = u->other;
		u->other = last;
		return m;
	}
	int k = module_index(u->proc, pc, u->func_ip, u->spec);
	if (k < 0)
		return 0;
	u->other = last;
	u->last = k;
	return &up->mods[k & (HT_UNWIND_MAX_MODULES - 1)];
}

struct row_search {
	__u64 rel;
	__u32 begin, lo, hi;
};

static long row_step(__u32 i, struct row_search *s)
{
	if (s->lo >= s->hi)
		return 1;
	__u32 mid = s->lo + (s->hi - s->lo) / 2, idx = s->begin + mid;
	struct ht_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!r)
		return 1;
	if (r->pc <= s->rel)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

/* The index of the last row of [begin, begin + count) whose pc is <= rel; -1: none. */
__noinline int row_index(__u32 begin, __u32 count, __u32 rel)
{
	struct row_search s = { .rel = rel, .begin = begin, .hi = count };

	bpf_loop(32, row_step, &s, 0);
	return s.lo ? (int)(begin + s.lo - 1) : -1;
}

/* The row in force at pc: the last whose start is <= pc.  Copied into *row; false when none. */
static __always_inline bool find_row(struct scratch *sc, const struct ht_unwind_module *m, __u64 pc,
				     struct ht_unwind_row *row)
{
	struct row_search s = { .rel = pc - m->bias, .begin = m->row_begin, .hi = m->row_count };

	if (s.rel >> 32)
		return false;
	struct row_cache *c = &sc->rows[(s.rel ^ (s.rel >> 9) ^ m->row_begin) & (ROW_CACHE - 1)];
	/* An empty entry (0, 0) matches no lookup: ELF address 0 is the ELF header, not code. */
	if (c->rel == (__u32)s.rel && c->row_begin == m->row_begin) {
		*row = c->row;
		return true;
	}
	int k = row_index(m->row_begin, m->row_count, s.rel);
	if (k < 0)
		return false;
	__u32 idx = k;
	struct ht_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!r)
		return false;
	*row = *r;
	c->rel = s.rel;
	c->row_begin = m->row_begin;
	c->row = *r;
	return true;
}

/*
 * A signal frame: pc is the restorer, a signal handler's return address,
 * and sp points just past it, at the ucontext holding the registers of the
 * code the signal interrupted.  The walk goes on from them.  Their rip is
 * the interrupted instruction itself, not a return address: it is kept as
 * rip + 1 (HT_SIGFRAME_PC), so that the lookup at pc - 1 here, and every
 * reader's of a profile, lands on it.  Returns 1 to stop: a frame that
 * cannot be read ends the walk truncated.  A global function: checked
 * once, not in every state of the walk.
 */
__noinline int signal_frame(struct unwind *u)
{
	struct sigframe_regs g;

	if (!u)
		return 1;
	if (read_sigframe(u->sp, &g) || !g.rip) {
		u->flags |= HT_STACK_TRUNCATED;
		return 1;
	}
	u->pc = HT_SIGFRAME_PC(g.rip);
	u->sp = g.rsp;
	u->fp = g.rbp;
	return 0;
}

/*
 * One frame: record pc, then find the caller's pc, sp and rbp from the CFI
 * row in force at pc (looked up at pc - 1: a return address may be the
 * first byte of the next function), or by frame pointer where there is
 * none.  Returns 1 to stop.  A global function (HT_CHECKED_ONCE): as
 * bpf_loop's callback itself the verifier walked it again and again until
 * its states converged (16,600 instructions of each allocation program's
 * 46,600), as a function once (about 500).
 */
HT_CHECKED_ONCE int unwind_frame(__u32 i)
{
	struct scratch *sc = scratch_here();
	struct unwind *u = sc ? &sc->uw : NULL;
	struct ht_unwind_proc *up = u ? bpf_map_lookup_elem(&unwind_procs, &u->proc) : 0;
	__u64 ra, cfa;

	if (!sc || !up)
		return 1;
	__u32 n = u->n;
	if (i >= max_depth || n >= HT_MAX_STACK_DEPTH) {
		u->flags |= HT_STACK_MAX_DEPTH;
		return 1;
	}
	sc->st.pcs[n] = u->pc;
	u->hash = ht_stack_hash_step(u->hash, u->pc);
	u->n = n + 1;

	/*
	 * No module: code of no file (JIT), or bpf_find_vma could not take
	 * the mmap lock (-EBUSY: another thread of the process is mapping
	 * memory, as malloc does growing an arena).  Either way this frame
	 * falls back to rbp; only a walk that cannot go on is truncated.
	 */
	struct ht_unwind_module *m = find_module(up, u, u->pc - 1);
	struct ht_unwind_row row;
	struct ht_unwind_row *r = m && m->row_count && find_row(sc, m, u->pc - 1, &row) ? &row : 0;
	if (r && r->cfa == HT_CFA_END)
		return 1;
	if (r && r->cfa == HT_CFA_SIGNAL)
		return signal_frame(u) ? 1 : 0;
	if (!r || r->cfa == HT_CFA_UNKNOWN) {
		__u64 frame[2];

		/* A restorer without a signal row (its object has no table): the kernel named it. */
		if (u->restorer && u->pc == u->restorer)
			return signal_frame(u) ? 1 : 0;
		count(u->proc, HT_UNWIND_FP_FRAMES);
		if (u->fp < min_frame_addr) {
			if (!m)
				u->flags |= HT_STACK_TRUNCATED;
			return 1;
		}
		if (read_stack(sc, u, u->fp, &frame[0]) || read_stack(sc, u, u->fp + 8, &frame[1])) {
			u->flags |= HT_STACK_TRUNCATED;
			return 1;
		}
		u->sp = u->fp + 16;
		u->fp = frame[0];
		ra = frame[1];
	} else {
		if (r->cfa == HT_CFA_PLT)
			cfa = u->sp + 8 + ((u->pc & 15) >= 11 ? 8 : 0);
		else
			cfa = (r->cfa == HT_CFA_RBP ? u->fp : u->sp) + (__s64)r->cfa_off;
		if (read_stack(sc, u, cfa - 8, &ra)) {
			u->flags |= HT_STACK_TRUNCATED;
			return 1;
		}
		if (r->rbp == HT_RBP_CFA) {
			if (read_stack(sc, u, cfa + (__s64)r->rbp_off, &u->fp))
				u->fp = 0;
		} else if (r->rbp == HT_RBP_UNKNOWN) {
			u->fp = 0;
		}
		u->sp = cfa;
	}
	if (!ra)
		return 1;
	u->pc = ra;
	return 0;
}

static long unwind_step(__u32 i, void *unused)
{
	return unwind_frame(i) ? 1 : 0;
}

static __always_inline __u32 dwarf_stack(__u64 ip, __u64 sp, __u64 fp, struct scratch *sc, __u32 proc, __u32 spec,
					 __u64 func_ip, __u64 *hash)
{
	/* The modules' indexes are hints only, each checked against the pc (find_module). */
	struct unwind *u = &sc->uw;

	*u = (struct unwind){ .pc = ip, .sp = sp, .fp = fp, .proc = proc, .func_ip = func_ip, .spec = spec,
			      .restorer = current_restorer(), .hash = HT_STACK_HASH_SEED, .last = sc->mod_last,
			      .other = sc->mod_other };
	u->sp0 = u->sp;
	u->copied = copy_stack(sc, u->sp);
	bpf_loop(HT_MAX_STACK_DEPTH + 1, unwind_step, NULL, 0);
	sc->st.flags = u->flags;
	sc->mod_last = u->last;
	sc->mod_other = u->other;
	*hash = ht_stack_hash_end(u->hash);
	return u->n;
}

#endif /* HT_UNWIND_BPF_H */
