// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One program per event kind, shared by every allocator entry point:
 * alloc_enter (uprobe), alloc_return (uretprobe), free_enter and
 * reset_enter (uprobes); alloc_session is alloc_enter and alloc_return in
 * one uprobe session, for --sample-rate on kernels that have them.  The
 * attach cookie selects an ht_alloc_spec saying where the request's
 * arguments are.  Everything is aggregated here, per stack; user space only
 * reads the maps when it writes a profile.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "heaptrace.h"

#define EEXIST 17

/* libbpf 1.1 stops at the fifth argument register. */
#if !defined(PT_REGS_PARM6) && defined(__TARGET_ARCH_x86)
#define PT_REGS_PARM6(x) (((const struct pt_regs *)(x))->r9)
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_tgid = 0;
const volatile __u64 page_size = 4096;
const volatile __u32 max_depth = HT_DEFAULT_MAX_DEPTH;
const volatile __u32 stack_mode = HT_STACK_WALK;
const volatile __u64 min_frame_addr = 4096;    /* vm.mmap_min_addr, at least 1 */
const volatile __u64 peak_step = 0;             /* bytes; 0: max(5% of the last at-peak state, 1 MiB) */
const volatile bool follow_fork = false;
const volatile bool multi_links = false;        /* attached by uprobe_multi or session links: bpf_get_func_ip works */
const volatile __u64 sample_rate = 0;           /* --sample-rate bytes; 0: every allocation */
const volatile struct ht_alloc_spec specs[HT_MAX_SPECS] = {};

/*
 * Set by user space when tracing stops, before the links are closed: each
 * close waits for a grace period, while the target goes on allocating and
 * freeing, and the profile is to be the heap as it was at the stop.
 */
volatile __u32 tracing_stopped = 0;

/* Kernel 6.10+ (uprobe sessions 6.13+); weak: the object still loads without it, alloc_session does not. */
extern bool bpf_session_is_return(void) __ksym __weak;

/* Task storage: found from the task itself, no hashing, and freed when the thread exits. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ht_call);
} calls SEC(".maps");

/* --follow-fork: children, added by user space while the child is held at its fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_MAX_PROCS);
	__type(key, __u32);             /* tgid */
	__type(value, struct ht_proc);
} procs SEC(".maps");

/* Sizes are set by the loader before load (--max-allocs, --max-stacks). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_DEFAULT_MAX_LIVE);
	__type(key, __u64);             /* ht_live_key() */
	__type(value, struct ht_block);
} live SEC(".maps");

/*
 * Frames, written once per new stack: allocated as used, not preallocated.
 * Values are a prefix of struct ht_stack, sized by the loader to
 * --max-depth, so the map carries no BTF value type to disagree with.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS);
	__uint(key_size, sizeof(__u64));        /* stack hash */
	__uint(value_size, sizeof(struct ht_stack));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS + 1);
	__type(key, struct ht_site_key);
	__type(value, struct ht_site);
} sites SEC(".maps");

/* Arena identity -> generation; a reset starts a new generation. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct ht_arena_key);
	__type(value, __u32);
} arenas SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS);
	__type(key, struct ht_arena_site_key);
	__type(value, struct ht_arena_site);
} arena_sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HT_COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HT_MAX_PROCS);
	__type(key, __u32);             /* process slot */
	__type(value, struct ht_totals);
} totals SEC(".maps");

/* Too big for the 512-byte BPF stack: per-CPU scratch for one stack capture. */
/*
 * Rows found for recent pcs, per CPU: a program's allocation stacks repeat,
 * and a hit saves a binary search of ~17 steps.  Tables are append-only, so
 * an (object, pc) pair always finds the same row: entries never go stale.
 */
#define ROW_CACHE 512

struct row_cache {
	__u32 rel;              /* pc as an ELF address */
	__u32 row_begin;        /* the object: its rows start there */
	struct ht_unwind_row row;
};

struct scratch {
	struct ht_stack st;
	__u64 copy[HT_STACK_COPY_BYTES / 8];
	struct row_cache rows[ROW_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* --unwind dwarf: every object's CFI rows, one array (sized and filled by user space, mmapped). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ht_unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
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

static __always_inline void count_n(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &which);

	if (v)
		*v += n;
}

static __always_inline void count(__u32 which)
{
	count_n(which, 1);
}

/* Arguments 1-6 by number, slot 0 and 7 zero so any 3-bit index is valid. */
static __always_inline void save_args(struct pt_regs *ctx, __u64 *a)
{
	a[0] = 0;
	a[1] = PT_REGS_PARM1(ctx);
	a[2] = PT_REGS_PARM2(ctx);
	a[3] = PT_REGS_PARM3(ctx);
	a[4] = PT_REGS_PARM4(ctx);
	a[5] = PT_REGS_PARM5(ctx);
	a[6] = PT_REGS_PARM6(ctx);
	a[7] = 0;
}

/* A spec's sum of products, over saved arguments and the return value. */
static __always_inline __u64 eval(const volatile struct ht_expr *e, const __u64 *args, __u64 ret)
{
	__u64 sum = 0;

	for (int i = 0; i < HT_EXPR_TERMS; i++) {
		if (i >= e->n)
			break;
		__u64 prod = 1;
		for (int j = 0; j < HT_EXPR_FACTORS; j++) {
			const volatile struct ht_factor *f = &e->t[i].f[j];

			if (j >= e->t[i].n)
				break;
			prod *= f->kind == HT_FACTOR_CONST ? f->value :
				f->kind == HT_FACTOR_RET   ? ret :
							     args[f->value & 7];
		}
		sum += prod;
	}
	return sum;
}

/* The current process's slot: 0 for the target, a child's with --follow-fork; -1: not traced. */
static __always_inline int proc_slot(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (tracing_stopped)
		return -1;
	if (tgid == target_tgid)
		return 0;
	if (!follow_fork)
		return -1;
	struct ht_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	return p ? (int)(p->slot & (HT_MAX_PROCS - 1)) : -1;
}

static __always_inline const volatile struct ht_alloc_spec *spec_of(__u32 i)
{
	return &specs[i & (HT_MAX_SPECS - 1)];
}

/* One bulk copy of the stack above sp, as much as is mapped: sc->copy holds the bytes read. */
static __always_inline __u64 copy_stack(struct scratch *sc, __u64 sp)
{
	if (!bpf_probe_read_user(sc->copy, HT_STACK_COPY_BYTES, (void *)sp))
		return HT_STACK_COPY_BYTES;
	/* The copy ran past the top of the stack: the rest of sp's page is always there. */
	__u64 copied = 4096 - (sp & 4095);
	if (copied > HT_STACK_COPY_BYTES ||
	    bpf_probe_read_user(sc->copy, copied & (HT_STACK_COPY_BYTES - 1), (void *)sp))
		return 0;
	return copied;
}

/*
 * The user stack at a return probe, innermost first: frame 0 is the return
 * address in the allocator's caller, then a frame-pointer walk.  The walk
 * reads frames from one bulk copy of the stack above the stack pointer (one
 * probe_read instead of two per frame) and reads a frame directly only when
 * it lies beyond the copy.  It stops where the kernel's own walk stops: at
 * an unreadable frame or max_depth; and at a zero return address, where
 * the stack map's readers stop too.
 */
static __always_inline __u32 walk_stack(struct pt_regs *ctx, struct scratch *sc)
{
	__u64 sp = PT_REGS_SP(ctx), fp = PT_REGS_FP(ctx);
	__u64 copied = copy_stack(sc, sp);
	__u32 n = 1;

	sc->st.pcs[0] = PT_REGS_IP(ctx);
	for (int i = 1; i < HT_MAX_STACK_DEPTH; i++) {
		__u64 frame[2];
		__u64 off = fp - sp;

		/*
		 * Below vm.mmap_min_addr nothing can be mapped: the read would
		 * fault and end the walk, as it does the kernel's, but a fault
		 * costs ~1 us.  The outermost frame of glibc's main thread
		 * (fp = 1) and of its threads (fp = 0) end here.
		 */
		if (fp < min_frame_addr)
			break;
		if (i >= max_depth) {
			sc->st.flags = HT_STACK_MAX_DEPTH;
			break;
		}
		if (fp >= sp && off + 16 <= copied && !(off & 7)) {
			__u32 k = (off >> 3) & (HT_STACK_COPY_BYTES / 8 - 2);
			frame[0] = sc->copy[k];
			frame[1] = sc->copy[k + 1];
		} else if (bpf_probe_read_user(frame, sizeof(frame), (void *)fp)) {
			break;
		}
		if (!frame[1])
			break;
		sc->st.pcs[i] = frame[1];
		fp = frame[0];
		n = i + 1;
	}
	return n;
}

/* The state of a CFI walk between frames (bpf_loop's context). */
struct unwind {
	__u64 pc, sp, fp;
	__u64 func_ip;          /* the probed function's address (uprobe_multi), 0: unknown */
	__u32 spec;
	__u64 sp0, copied;      /* the bulk copy of the stack: [sp0, sp0 + copied) */
	__u32 proc;
	__u32 n;
	__u32 flags;
	__u32 last;             /* the module of the previous frame: stacks stay in few objects */
};

static __always_inline int read_stack(const struct scratch *sc, const struct unwind *u, __u64 addr, __u64 *out)
{
	__u64 off = addr - u->sp0;

	if (addr >= u->sp0 && off + 8 <= u->copied && !(off & 7)) {
		*out = sc->copy[(off >> 3) & (HT_STACK_COPY_BYTES / 8 - 1)];
		return 0;
	}
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
}

struct vma_info {
	__u64 start, end, pgoff;
	struct ht_unwind_object_key key;
	bool file;
};

static long vma_found(struct task_struct *task, struct vm_area_struct *vma, struct vma_info *v)
{
	struct file *f = BPF_CORE_READ(vma, vm_file);

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
	struct vma_info v = {};

	/* -EBUSY when the mmap lock is contended: this frame falls back to rbp, nothing is cached. */
	if (bpf_find_vma(bpf_get_current_task_btf(), pc, vma_found, &v, 0) || !v.file)
		return -1;

	struct ht_unwind_object *o = bpf_map_lookup_elem(&unwind_objects, &v.key);
	return insert_module(up, v.start, v.end, o ? v.start - v.pgoff * page_size - o->delta : 0, o);
}

/*
 * The searches run as bpf_loop callbacks: verified once, where unrolled
 * loops nested in the frame loop would exceed the verifier's budget.
 */
struct module_search {
	struct ht_unwind_proc *up;
	__u64 pc;
	__u32 n;
	int found;
};

static long module_step(__u32 k, struct module_search *s)
{
	if (k >= s->n || !s->up)
		return 1;
	struct ht_unwind_module *m = &s->up->mods[k & (HT_UNWIND_MAX_MODULES - 1)];
	if (m->ready && s->pc >= m->start && s->pc < m->end) {
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

	if (!up)
		return -1;
	struct module_search s = { .up = up, .pc = pc, .found = -1,
				   .n = up->n < HT_UNWIND_MAX_MODULES ? up->n : HT_UNWIND_MAX_MODULES };
	bpf_loop(HT_UNWIND_MAX_MODULES, module_step, &s, 0);
	if (s.found >= 0)
		return s.found;
	int k = known_module(up, pc, func_ip, spec);
	return k >= 0 ? k : add_module(up, pc);
}

static __always_inline struct ht_unwind_module *find_module(struct ht_unwind_proc *up, struct unwind *u,
							    __u64 pc)
{
	struct ht_unwind_module *m = &up->mods[u->last & (HT_UNWIND_MAX_MODULES - 1)];

	if (m->ready && pc >= m->start && pc < m->end)
		return m;
	int k = module_index(u->proc, pc, u->func_ip, u->spec);
	if (k < 0)
		return 0;
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
 * One frame: record pc, then find the caller's pc, sp and rbp from the CFI
 * row in force at pc (looked up at pc - 1: a return address may be the
 * first byte of the next function), or by frame pointer where there is
 * none.  Returns 1 to stop.
 */
static long unwind_step(__u32 i, struct unwind *u)
{
	__u32 zero = 0;
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);
	struct ht_unwind_proc *up = bpf_map_lookup_elem(&unwind_procs, &u->proc);
	__u64 ra, cfa;

	if (!sc || !up)
		return 1;
	__u32 n = u->n;
	if (i >= max_depth || n >= HT_MAX_STACK_DEPTH) {
		u->flags |= HT_STACK_MAX_DEPTH;
		return 1;
	}
	sc->st.pcs[n] = u->pc;
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
	if (!r || r->cfa == HT_CFA_UNKNOWN) {
		__u64 frame[2];

		count(HT_UNWIND_FP_FRAMES);
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

static __always_inline __u32 dwarf_stack(struct pt_regs *ctx, struct scratch *sc, __u32 proc, __u32 spec)
{
	struct unwind u = { .pc = PT_REGS_IP(ctx), .sp = PT_REGS_SP(ctx), .fp = PT_REGS_FP(ctx), .proc = proc,
			    .func_ip = multi_links ? bpf_get_func_ip(ctx) : 0, .spec = spec };

	u.sp0 = u.sp;
	u.copied = copy_stack(sc, u.sp);
	bpf_loop(HT_MAX_STACK_DEPTH + 1, unwind_step, &u, 0);
	sc->st.flags = u.flags;
	return u.n;
}

static __always_inline __u32 kernel_stack(struct pt_regs *ctx, struct scratch *sc)
{
	long bytes = bpf_get_stack(ctx, sc->st.pcs, (max_depth & 127) * sizeof(__u64), BPF_F_USER_STACK);
	__u32 n = 0;

	if (bytes <= 0)
		return 0;
	for (int i = 0; i < HT_MAX_STACK_DEPTH; i++) {
		if (i >= bytes / 8 || !sc->st.pcs[i])
			break;
		n = i + 1;
	}
	return n;
}

/* FNV-1a over the frames, 0 kept free for HT_STACK_LOST. */
static __always_inline __u64 hash_stack(const struct ht_stack *st)
{
	__u64 h = 0xcbf29ce484222325ull;

	for (int i = 0; i < HT_MAX_STACK_DEPTH; i++) {
		if (i >= st->depth)
			break;
		h = (h ^ st->pcs[i]) * 0x100000001b3ull;
	}
	h ^= h >> 29;
	return h ? h : 1;
}

/* Capture, hash and store (once) the current stack; its hash, or HT_STACK_LOST. */
static __always_inline __u64 capture_stack(struct pt_regs *ctx, __u32 proc, __u32 spec)
{
	__u32 zero = 0;
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);

	if (!sc)
		return HT_STACK_LOST;
	sc->st.flags = 0;
	sc->st.depth = stack_mode == HT_STACK_KERNEL ? kernel_stack(ctx, sc) :
		       stack_mode == HT_STACK_DWARF  ? dwarf_stack(ctx, sc, proc, spec) :
						       walk_stack(ctx, sc);
	if (!sc->st.depth) {
		count(HT_LOSS_STACK_ERROR);
		return HT_STACK_LOST;
	}
	if (sc->st.flags & HT_STACK_TRUNCATED)
		count(HT_STACKS_TRUNCATED);
	if (sc->st.flags & HT_STACK_MAX_DEPTH)
		count(HT_STACKS_MAX_DEPTH);

	__u64 h = hash_stack(&sc->st);
	struct ht_stack *known = bpf_map_lookup_elem(&stacks, &h);
	if (known) {
		/* A cheap check that catches all but astronomically unlucky collisions. */
		if (known->depth != sc->st.depth || known->pcs[0] != sc->st.pcs[0]) {
			count(HT_LOSS_STACK_COLLISION);
			return HT_STACK_LOST;
		}
		return h;
	}
	if (bpf_map_update_elem(&stacks, &h, &sc->st, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&stacks, &h)) {
		count(HT_LOSS_STACK_ERROR);
		return HT_STACK_LOST;
	}
	return h;
}

/* A change of in-use counters: raw counts and estimates (see struct ht_site). */
struct inuse_delta {
	__s64 objects, bytes;
	__s64 est_objects, est_bytes;   /* Q16, bytes */
};

/* What one block adds to (sign 1) or takes off (-1) the in-use counters. */
static __always_inline struct inuse_delta block_delta(const struct ht_block *b, __s64 sign)
{
	struct inuse_delta d = {
		.objects = sign * b->objects,
		.bytes = sign * (__s64)b->size,
		.est_objects = sign * (__s64)(b->weight * b->objects),
		.est_bytes = sign * (__s64)ht_weighted_bytes(b->size, b->weight),
	};
	return d;
}

/*
 * Every change of a site's in-use counters goes through here: it keeps the
 * process totals and the peak, and copies the site's at-peak values before
 * the first change after a new peak epoch.
 */
static __always_inline void site_inuse(struct ht_site *s, __u32 proc, const struct inuse_delta *d)
{
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &proc);
	__s64 bytes = d->est_bytes;

	if (!t)
		return;
	if (s->epoch != t->epoch) {
		s->peak_objects = s->est_inuse_objects;
		s->peak_bytes = s->est_inuse_bytes;
		s->epoch = t->epoch;
	}
	__sync_fetch_and_add(&s->inuse_objects, d->objects);
	__sync_fetch_and_add(&s->inuse_bytes, d->bytes);
	__sync_fetch_and_add(&s->est_inuse_objects, d->est_objects);
	__sync_fetch_and_add(&s->est_inuse_bytes, d->est_bytes);
	__sync_fetch_and_add(&t->inuse_objects, d->est_objects);
	__s64 now = __sync_fetch_and_add(&t->inuse_bytes, bytes) + bytes;
	if (bytes <= 0 || now <= (__s64)t->peak_bytes)
		return;
	/* Racing CPUs may each see a new peak; the last writer wins, off by one allocation at most. */
	__u64 ns = bpf_ktime_get_ns();
	t->peak_bytes = now;
	t->peak_ns = ns;
	__u64 step = peak_step;
	if (!step) {
		step = t->epoch_bytes / 20;
		if (step < (1 << 20))
			step = 1 << 20;
	}
	if (now > (__s64)(t->epoch_bytes + step)) {
		t->epoch_bytes = now;
		t->epoch_ns = ns;
		__sync_fetch_and_add(&t->epoch, 1);
	}
}

/* log2 of a block's lifetime in microseconds, as a histogram bucket. */
static __always_inline __u32 life_bucket(__u64 ns)
{
	__u64 us = ns / 1000;
	__u32 b = 0;

	if (us >> 16) { us >>= 16; b += 16; }
	if (us >> 8) { us >>= 8; b += 8; }
	if (us >> 4) { us >>= 4; b += 4; }
	if (us >> 2) { us >>= 2; b += 2; }
	if (us >> 1) { b += 1; }
	return b < HT_LIFE_BUCKETS ? b : HT_LIFE_BUCKETS - 1;
}

static __always_inline struct ht_site *site_of(__u64 stack, __u32 proc)
{
	struct ht_site_key key = { .stack = stack, .proc = proc };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &key);

	if (s)
		return s;
	/* Two CPUs may race to create it: NOEXIST lets one win, both then share it. */
	struct ht_site zero = {};
	bpf_map_update_elem(&sites, &key, &zero, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&sites, &key);
	if (!s)
		count(HT_LOSS_SITE_FULL);
	return s;
}

/* The generation a block of this arena must carry to still be live. */
static __always_inline __u32 arena_gen(__u64 arena, __u32 proc)
{
	struct ht_arena_key key = { .arena = arena, .proc = proc };
	__u32 *g = arena ? bpf_map_lookup_elem(&arenas, &key) : 0;

	return g ? *g : 0;
}

static __always_inline void arena_add(const struct ht_block *b, __u32 proc, __s64 sign)
{
	struct ht_arena_site_key key = { .arena = b->arena, .stack = b->stack, .proc = proc };
	struct ht_arena_site *a = bpf_map_lookup_elem(&arena_sites, &key);

	if (!a) {
		struct ht_arena_site zero = {};
		bpf_map_update_elem(&arena_sites, &key, &zero, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&arena_sites, &key);
		if (!a) {
			count(HT_LOSS_ARENA_FULL);
			return;
		}
	}
	struct inuse_delta d = block_delta(b, sign);
	__sync_fetch_and_add(&a->inuse_objects, d.objects);
	__sync_fetch_and_add(&a->inuse_bytes, d.bytes);
	__sync_fetch_and_add(&a->est_inuse_objects, d.est_objects);
	__sync_fetch_and_add(&a->est_inuse_bytes, d.est_bytes);
}

/*
 * A live block leaves the in-use counters.  A block of an arena that was
 * reset since it was allocated left them at the reset already.
 */
static __always_inline bool release(struct ht_block *b, __u32 proc)
{
	if (b->arena && b->gen != arena_gen(b->arena, proc))
		return false;

	struct ht_site_key key = { .stack = b->stack, .proc = proc };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &key);

	if (s) {
		struct inuse_delta d = block_delta(b, -1);
		site_inuse(s, proc, &d);
	}
	if (b->arena)
		arena_add(b, proc, -1);
	return true;
}

/* A block freed by the program (not a reset): its lifetime goes to its stack's histogram. */
static __always_inline void record_lifetime(const struct ht_block *b, __u32 proc)
{
	struct ht_site_key key = { .stack = b->stack, .proc = proc };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &key);
	__u64 life = bpf_ktime_get_ns() - b->time_ns;

	if (!s)
		return;
	__sync_fetch_and_add(&s->lifetimes[life_bucket(life)], 1);
	if (life < HT_TEMPORARY_NS)
		__sync_fetch_and_add(&s->temporary, 1);
}

/* A followed child frees what it inherited: the block is live in its parent's slot. */
static __always_inline bool inherited(__u64 ptr, __u32 proc)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ht_proc *p = proc ? bpf_map_lookup_elem(&procs, &tgid) : 0;

	if (!p)
		return false;
	__u64 key = ht_live_key(ptr, p->parent);
	return bpf_map_lookup_elem(&live, &key);
}

static __always_inline void free_block(__u64 ptr, __u32 proc)
{
	__u64 key = ht_live_key(ptr, proc);
	struct ht_block *live_b = bpf_map_lookup_elem(&live, &key);

	if (!live_b) {
		/* Sampling: most blocks were never recorded, and their frees are no news. */
		if (inherited(ptr, proc))
			count(HT_INHERITED_FREES);
		else if (!sample_rate)
			count(HT_UNMATCHED_FREES);
		return;
	}
	struct ht_block b = *live_b;
	/* Only the deleter accounts the free, so a racing double free counts once. */
	if (bpf_map_delete_elem(&live, &key))
		return;
	if (release(&b, proc)) {
		record_lifetime(&b, proc);
		count(HT_FREES);
	}
}

static __always_inline void record_alloc(struct pt_regs *ctx, __u32 proc, __u32 spec, __u64 ptr, __u64 size,
					 __u64 objects, __u64 arena)
{
	struct ht_block b = { .size = size, .time_ns = bpf_ktime_get_ns(), .stack = capture_stack(ctx, proc, spec),
			      .arena = arena, .objects = objects, .gen = arena_gen(arena, proc),
			      .weight = ht_weight_q16(size, sample_rate) };
	__u64 key = ht_live_key(ptr, proc);
	struct ht_site *s = site_of(b.stack, proc);

	if (!s)
		return;
	__sync_fetch_and_add(&s->alloc_objects, objects);
	__sync_fetch_and_add(&s->alloc_bytes, size);
	__sync_fetch_and_add(&s->est_alloc_objects, b.weight * b.objects);
	__sync_fetch_and_add(&s->est_alloc_bytes, ht_weighted_bytes(size, b.weight));
	count(HT_ALLOCS);

	if (bpf_map_update_elem(&live, &key, &b, BPF_NOEXIST)) {
		struct ht_block *old = bpf_map_lookup_elem(&live, &key);

		if (!old) {
			count(HT_LOSS_LIVE_FULL);
			return;
		}
		/* The allocator handed this address out again: its free went unseen, or its arena was reset. */
		struct ht_block stale = *old;
		if (release(&stale, proc))
			count(HT_REUSED_BLOCKS);
		if (bpf_map_update_elem(&live, &key, &b, BPF_EXIST)) {
			count(HT_LOSS_LIVE_FULL);
			return;
		}
	}
	struct inuse_delta d = block_delta(&b, 1);
	site_inuse(s, proc, &d);
	if (arena)
		arena_add(&b, proc, 1);
}

/* The request's size in bytes, as the allocator rounds it (pvalloc). */
static __always_inline __u64 request_size(const volatile struct ht_alloc_spec *spec, const __u64 *args, __u64 ret)
{
	__u64 size = eval(&spec->size, args, ret);

	return spec->page_round ? (size + page_size - 1) & ~(page_size - 1) : size;
}

/*
 * --sample-rate: does the thread's countdown cover an allocation of size
 * bytes?  If not, the allocation is sampled and the next countdown drawn
 * (bpf/sample.h says why this samples s bytes with probability
 * 1 - exp(-s/R)).  A countdown is per thread: no atomics, and the draws of
 * different threads are independent.
 */
static __always_inline bool sample(struct ht_call *c, __u64 size)
{
	if (!c->sampler_ready) {
		c->until_sample = ht_sample_interval(sample_rate, bpf_get_prandom_u32());
		c->sampler_ready = 1;
	}
	if (!ht_countdown(&c->until_sample, size))
		return false;
	c->until_sample = ht_sample_interval(sample_rate, bpf_get_prandom_u32());
	return true;
}

static __always_inline bool is_live(__u64 ptr, __u32 proc)
{
	__u64 key = ht_live_key(ptr, proc);

	return bpf_map_lookup_elem(&live, &key);
}

/*
 * What the return of an outermost allocator call (arguments in c->args)
 * will have to do.  With --sample-rate the size is known here, so an
 * unsampled call needs nothing at its return, unless it is a realloc of a
 * block that was sampled: that block is gone if the call succeeds.
 */
static __always_inline __u8 entry_decision(struct ht_call *c, __u32 proc, const volatile struct ht_alloc_spec *spec)
{
	if (!sample_rate)
		return HT_CALL_RECORD;
	if (spec->size_at_return)
		return HT_CALL_DECIDE;
	if (sample(c, request_size(spec, c->args, 0)))
		return HT_CALL_RECORD;

	__u64 old = spec->old_ptr_arg ? c->args[spec->old_ptr_arg & 7] : 0;
	return old && is_live(old, proc) ? HT_CALL_FREE_OLD : HT_CALL_SKIP;
}

/* The uretprobe trampoline of the current process, cached per thread (0: none mapped yet). */
static __always_inline __u64 uretprobe_trampoline(struct ht_call *c)
{
	if (!c->trampoline) {
		struct task_struct *task = bpf_get_current_task_btf();
		c->trampoline = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	}
	return c->trampoline;
}

/*
 * Uprobe sessions: a skipped return cannot tell when its call ended.  A
 * later entry is nested in it (glibc's realloc(NULL, n) jumps to malloc,
 * its small posix_memalign calls malloc, an arena allocator mallocs its
 * chunks) when it is below the call's stack pointer, or at it in another
 * function (a tail jump), and the call's return address is still in its
 * slot: once the call has returned, the caller's next call writes its own
 * return address there.  The same function entered at the same stack
 * pointer is the caller calling again.  The slot may hold the uretprobe
 * trampoline instead when another tracer's return probe took the call's
 * return address.  A stale slot that happens to hold the same address can
 * hide a call from the sampler; nested calls are never counted twice.
 */
static __always_inline bool nested_in_skipped(struct ht_call *c, __u64 sp, __u32 spec)
{
	__u64 ra;

	if (!c->skip_sp || sp > c->skip_sp || (sp == c->skip_sp && spec == c->skip_spec))
		return false;
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)c->skip_sp))
		return false;
	return ra == c->skip_ra || ra == uretprobe_trampoline(c);
}

/* An allocator's entry.  Returns whether its return probe is needed. */
static __always_inline bool alloc_entry(struct pt_regs *ctx, bool session)
{
	int proc = proc_slot();

	if (proc < 0)
		return false;

	struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c) {
		count(HT_LOSS_CALLS_FULL);
		return false;
	}
	__u64 sp = PT_REGS_SP(ctx);
	__u32 spec = bpf_get_attach_cookie(ctx);
	if (c->depth) {
		/*
		 * An allocator entry point called from inside another: deeper
		 * (reallocarray calls realloc, an arena allocator calls malloc
		 * for a chunk) or at the same stack pointer when tail-called
		 * (glibc's realloc(NULL, n) jumps to malloc; both return probes
		 * then fire at the one return).  Only the outermost call is the
		 * program's request.  In a session the inner return is not
		 * needed at all.
		 */
		if (sp <= c->sp) {
			if (session)
				return false;
			c->depth++;
			return true;
		}
		count(HT_LOSS_STALE_ENTRY);
	}
	if (session && nested_in_skipped(c, sp, spec))
		return false;
	save_args(ctx, c->args);
	c->sp = sp;
	c->spec = spec;
	c->depth = 1;
	c->skip_sp = 0;
	c->state = entry_decision(c, proc, spec_of(spec));
	if (session && c->state == HT_CALL_SKIP) {
		c->depth = 0;
		if (!bpf_probe_read_user(&c->skip_ra, sizeof(c->skip_ra), (void *)sp)) {
			c->skip_sp = sp;
			c->skip_spec = spec;
		}
		return false;
	}
	return true;
}

/* An allocator's return: the outermost call's allocation is recorded, or not sampled. */
static __always_inline void alloc_exit(struct pt_regs *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return;

	struct ht_call *cur = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!cur || !cur->depth) {
		count(HT_LOSS_NO_ENTRY);
		return;
	}
	if (cur->depth > 1) {
		cur->depth--;
		return;
	}
	cur->depth = 0;
	if (cur->state == HT_CALL_SKIP)
		return;

	const volatile struct ht_alloc_spec *spec = spec_of(cur->spec);
	__u64 ret = PT_REGS_RC(ctx);
	__u64 size = request_size(spec, cur->args, ret);
	__u64 ptr = eval(&spec->ptr, cur->args, ret);
	bool record = cur->state == HT_CALL_RECORD || (cur->state == HT_CALL_DECIDE && sample(cur, size));

	if (spec->out_ptr_arg) {
		/* posix_memalign returns an error number; the block comes back through *memptr. */
		if ((int)ret != 0 ||
		    bpf_probe_read_user(&ptr, sizeof(ptr), (void *)cur->args[spec->out_ptr_arg & 7]))
			ptr = 0;
	}

	__u64 old_ptr = spec->old_ptr_arg ? cur->args[spec->old_ptr_arg & 7] : 0;
	if (old_ptr) {
		/* realloc: the old block is gone when a new one came back, or when size 0 freed it. */
		if (ptr || size == 0)
			free_block(old_ptr, proc);
		if (!ptr) {
			if (size && record)
				count(HT_FAILED_ALLOCS);
			return;
		}
	}
	/* With --sample-rate, failed calls are counted among the sampled ones only. */
	if (!ptr) {
		if (record)
			count(HT_FAILED_ALLOCS);
		return;
	}
	if (record)
		record_alloc(ctx, proc, cur->spec, ptr, size, eval(&spec->objects, cur->args, ret),
			     eval(&spec->arena, cur->args, ret));
}

SEC("uprobe")
int alloc_enter(struct pt_regs *ctx)
{
	alloc_entry(ctx, false);
	return 0;
}

SEC("uretprobe")
int alloc_return(struct pt_regs *ctx)
{
	alloc_exit(ctx);
	return 0;
}

/*
 * alloc_enter and alloc_return as one uprobe session (kernel 6.13+),
 * loaded as BPF_TRACE_UPROBE_SESSION by user/tracer.c: an entry that
 * returns non-zero skips the return probe, so an unsampled call costs one
 * trap instead of two.
 */
SEC("uprobe")
int alloc_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return()) {
		alloc_exit(ctx);
		return 0;
	}
	return alloc_entry(ctx, true) ? 0 : 1;
}

/* Inside an allocator call, a free is that call's business (realloc(p, 0) frees p). */
static __always_inline bool inside_alloc_call(struct pt_regs *ctx)
{
	struct ht_call *cur = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);

	return cur && cur->depth && PT_REGS_SP(ctx) <= cur->sp;
}

SEC("uprobe")
int free_enter(struct pt_regs *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;

	__u64 args[8];
	save_args(ctx, args);
	__u64 ptr = eval(&spec_of(bpf_get_attach_cookie(ctx))->ptr, args, 0);
	if (!ptr || inside_alloc_call(ctx))
		return 0;
	free_block(ptr, proc);
	return 0;
}

struct reset_ctx {
	__u64 arena;
	__u64 objects;
	__u32 proc;
};

/* Release one (arena, stack) pair's in-use counts from its stack's counters. */
static long reset_site(struct bpf_map *map, struct ht_arena_site_key *key, struct ht_arena_site *a,
		       struct reset_ctx *rc)
{
	if (key->arena != rc->arena || key->proc != rc->proc)
		return 0;

	struct ht_site_key sk = { .stack = key->stack, .proc = rc->proc };
	struct ht_site *s = bpf_map_lookup_elem(&sites, &sk);
	struct inuse_delta d = { -a->inuse_objects, -a->inuse_bytes, -a->est_inuse_objects, -a->est_inuse_bytes };
	if (s)
		site_inuse(s, rc->proc, &d);
	rc->objects += a->inuse_objects;
	bpf_map_delete_elem(map, key);
	return 0;
}

/*
 * An arena reset frees every block allocated from the arena.  Rather than
 * visit every live block, it releases the arena's per-stack totals and
 * starts a new generation: blocks of older generations are dead, and are
 * dropped silently when their address comes back or they are freed.
 */
SEC("uprobe")
int reset_enter(struct pt_regs *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;

	__u64 args[8];
	save_args(ctx, args);
	struct reset_ctx rc = { .arena = eval(&spec_of(bpf_get_attach_cookie(ctx))->arena, args, 0),
				.proc = proc };
	if (!rc.arena)
		return 0;

	struct ht_arena_key ak = { .arena = rc.arena, .proc = proc };
	__u32 *g = bpf_map_lookup_elem(&arenas, &ak);
	if (g) {
		__sync_fetch_and_add(g, 1);
	} else {
		__u32 one = 1;
		if (bpf_map_update_elem(&arenas, &ak, &one, BPF_NOEXIST))
			count(HT_LOSS_ARENA_FULL);
	}
	bpf_for_each_map_elem(&arena_sites, reset_site, &rc, 0);
	count(HT_RESETS);
	count_n(HT_RESET_OBJECTS, rc.objects);
	return 0;
}

struct exec_ctx {
	__u64 dropped;
	__u32 proc;
};

static long drop_block(struct bpf_map *map, __u64 *key, struct ht_block *b, struct exec_ctx *x)
{
	struct ht_block copy = *b;

	if (ht_live_key_proc(*key) == x->proc && !bpf_map_delete_elem(map, key) && release(&copy, x->proc))
		x->dropped++;
	return 0;
}

/*
 * execve() replaces the heap: every block of the old program is gone
 * without a free.  Release them all, so the new program starts from zero
 * in use (its allocations are traced if it uses the same allocator object).
 */
SEC("tracepoint/sched/sched_process_exec")
int process_exec(void *ctx)
{
	int proc = proc_slot();

	if (proc < 0)
		return 0;
	struct exec_ctx x = { .proc = proc };
	/* No call of the old program returns; its stack and trampoline are gone. */
	struct ht_call *c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (c) {
		c->depth = 0;
		c->skip_sp = 0;
		c->trampoline = 0;
	}
	bpf_for_each_map_elem(&live, drop_block, &x, 0);
	count(HT_EXECS);
	count_n(HT_EXEC_DROPPED, x.dropped);
	struct ht_totals *t = bpf_map_lookup_elem(&totals, &x.proc);
	if (t) {
		__sync_fetch_and_add(&t->execs, 1);
		__sync_fetch_and_add(&t->exec_dropped, x.dropped);
	}
	return 0;
}
