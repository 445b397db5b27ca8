// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The stub's stack walk: the BPF walk of bpf/unwind.bpf.h (CFI) and
 * bpf/stack.bpf.h (frame pointers), step for step, run in the process at
 * the recorded call, so that the BPF program at the record site only
 * hashes and stores the frames.  It must give what the BPF walk would
 * give, or nothing: wherever it cannot be sure of that, it gives up and
 * the BPF walk runs as before.
 *
 * It must never fault the process: bpf_probe_read_user cannot fault, a
 * load here can.  So every read of the stack is bounded to a range proved
 * to be mapped and to stay mapped while the thread runs on it: its own
 * stack, from the lowest stack pointer proved so far up to its thread
 * pointer (glibc and musl put a thread's descriptor at the top of its
 * stack) or, for the main thread, to the top of [stack] (told by
 * heaptrace).  A range is proved once per thread, and again each time
 * the thread goes deeper, by one process_vm_readv of its own memory (a
 * byte of each page: a system call reports a fault, it does not take
 * it).  A read outside the range (a garbage frame pointer, a frame on an
 * alternate signal stack or a coroutine's stack) gives the walk up; the
 * BPF walk then reads it, or fails to, as before.  The tables are read
 * only within their mapping: a row index out of it gives up too.
 */
#include "python.h"
#include "unwind.h"

extern const struct stub_cfg stub_cfg __attribute__((visibility("hidden")));
extern struct stub_data stub_data __attribute__((visibility("hidden")));

#define SYS_process_vm_readv 310
#define PAGE 4096ull
/* How far below a proved range one proof may reach: deeper stacks go to BPF until a walk proves less. */
#define PROVE_SPAN (1ull << 20)
#define PROVE_BATCH 32

struct iov {
	__u64 base, len;
};

static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Is every page of [lo, hi) readable now?  One byte of each, by the kernel: a fault is an error, not a signal. */
static int readable(__u64 lo, __u64 hi)
{
	__u8 buf[PROVE_BATCH];
	struct iov local = { (__u64)buf, 0 }, remote[PROVE_BATCH];
	__u64 pid = __atomic_load_n(&stub_data.w.pid, __ATOMIC_RELAXED);

	if (!pid || hi <= lo)
		return 0;
	for (__u64 p = lo & ~(PAGE - 1); p < hi;) {
		long n = 0;
		for (; n < PROVE_BATCH && p < hi; n++, p += PAGE)
			remote[n] = (struct iov){ p, 1 };
		local.len = n;
		if (sys6(SYS_process_vm_readv, (long)pid, (long)&local, 1, (long)remote, n, 0) != n)
			return 0;
	}
	return 1;
}

/* --- the threads' proved stacks (struct stub_stack) --- */

static int slot_read(struct stub_stack *s, __u64 *seq, __u64 *tp, __u64 *lo, __u64 *hi)
{
	__u64 q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);

	*seq = q;
	if (q & 1)
		return -1;
	*tp = __atomic_load_n(&s->tp, __ATOMIC_RELAXED);
	*lo = __atomic_load_n(&s->lo, __ATOMIC_RELAXED);
	*hi = __atomic_load_n(&s->hi, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == q ? 0 : -1;
}

/* Write a slot read at seq q; lost to a concurrent writer (a signal handler of this thread): not kept. */
static void slot_write(struct stub_stack *s, __u64 q, __u64 tp, __u64 lo, __u64 hi)
{
	if (!__atomic_compare_exchange_n(&s->seq, &q, q + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&s->tp, tp, __ATOMIC_RELAXED);
	__atomic_store_n(&s->lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&s->hi, hi, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE);
}

/*
 * The proved range of the stack that sp is on: [*lo, *hi), sp in it.
 * 0, or -1: not proved (the walk is left to BPF).
 */
static int stack_range(__u64 tp, __u64 sp, __u64 *lo, __u64 *hi)
{
	__u64 mlo = __atomic_load_n(&stub_data.w.main_lo, __ATOMIC_RELAXED);
	__u64 mhi = __atomic_load_n(&stub_data.w.main_hi, __ATOMIC_RELAXED);

	/*
	 * The main thread's stack: nothing may be mapped right below it (the
	 * kernel's stack guard gap), so pages proved readable from sp up to
	 * its lowest proved address are the stack, grown.
	 */
	if (sp < mhi && sp + PROVE_SPAN >= mlo) {
		if (sp < mlo) {
			if (!readable(sp, mlo))
				return -1;
			__u64 want = sp & ~(PAGE - 1);
			while (want < mlo && !__atomic_compare_exchange_n(&stub_data.w.main_lo, &mlo, want, 1,
									 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				;
			mlo = want;
		}
		*lo = mlo;
		*hi = mhi;
		return 0;
	}
	if (!tp || sp >= tp || tp - sp > 64 * PROVE_SPAN)
		return -1;
	__u32 h = ht_stub_depth_hash(tp);
	struct stub_stack *mine = 0, *free_slot = 0;
	__u64 mine_q = 0, free_q = 0, slo = 0, shi = 0;
	for (__u32 i = 0; i < STUB_STACK_PROBES; i++) {
		struct stub_stack *s = &stub_data.stacks[(h + i) % STUB_STACK_SLOTS];
		__u64 q, stp, l, hh;
		if (slot_read(s, &q, &stp, &l, &hh))
			continue;
		if (stp == tp && !mine) {
			mine = s, mine_q = q, slo = l, shi = hh;
		} else if (!stp && !free_slot) {
			free_slot = s, free_q = q;
		}
	}
	if (mine && sp >= slo && sp < shi) {
		*lo = slo;
		*hi = shi;
		return 0;
	}
	/* New, or deeper than proved: prove [sp's page, the proved part or tp). */
	__u64 top = mine && sp < slo ? slo : tp;
	if (top - sp > PROVE_SPAN || !readable(sp, top))
		return -1;
	*lo = sp & ~(PAGE - 1);
	*hi = mine ? shi : tp;
	if (mine) {
		slot_write(mine, mine_q, tp, *lo, *hi);
	} else {
		struct stub_stack *s = free_slot ? free_slot : &stub_data.stacks[(h + (sp >> 12) % STUB_STACK_PROBES) %
										   STUB_STACK_SLOTS];
		__u64 q = free_q;
		__u64 stp, l, hh;
		/* Evicting another thread's slot: it proves its range again at its next walk. */
		if (free_slot || !slot_read(s, &q, &stp, &l, &hh))
			slot_write(s, q, tp, *lo, *hi);
	}
	return 0;
}

/* --- the walk --- */

struct walk {
	__u64 pc, sp, fp;
	__u64 lo, hi;                   /* the stack's proved range: every read stays in it */
	const struct ht_share *sh;
	const struct ht_share_index *ix;
	const struct ht_unwind_row *rows;
	__u32 nrows;
	__u32 gen;                      /* the tables' gen the walk reads under */
	__u32 session;                  /* the installation's: the pc cache's key with gen */
	__u32 last;                     /* the previous frame's module */
	/* The previous frame's lookup: a recursion's frames repeat one return address. */
	__u64 seen_pc;
	int seen_found;
	struct ht_unwind_row seen_row;
	struct ht_stub_stack *out;
	/* out's frames hashed as they come: off the walk's chain of loads, where a loop after it is not. */
	__u64 hash;
	/*
	 * The words read, kept in the thread's memo slot as they are read
	 * (mw: the slot, held for writing; 0: none kept), not on the stack:
	 * the stub runs on the thread's.  nreads past STUB_MEMO_READS: too many.
	 */
	struct stub_memo *mw;
	__u32 nreads;
	/*
	 * Where rbp came from: a read (its index), the entry's register
	 * (FP_ENTRY) or neither (FP_NONE).  A read of a saved rbp matters to
	 * the walk only if a later step uses rbp before another replaces it:
	 * the memo checks the words of those (fp_loads without fp_used set
	 * need only be where they were), and the entry's rbp only if used.
	 */
	int fp_src;
	__u64 fp_loads[2], fp_used[2];
	int entry_fp_used;
};

#define FP_ENTRY (-1)
#define FP_NONE (-2)

/* rbp, as read i made it (an index < 128 is kept: the memo keeps at most STUB_MEMO_READS reads). */
static void fp_from(struct walk *w, __u32 i)
{
	w->fp_src = (int)i;
	if (i < 128)
		w->fp_loads[i / 64] |= 1ull << (i % 64);
}

/* The walk goes by rbp's value: what made it must hold for a memo of the walk to. */
static void fp_use(struct walk *w)
{
	if (w->fp_src == FP_ENTRY)
		w->entry_fp_used = 1;
	else if (w->fp_src >= 0 && w->fp_src < 128)
		w->fp_used[w->fp_src / 64] |= 1ull << (w->fp_src % 64);
}

/* A read of the stack: -1 when [addr, addr + len) is not all in the proved range (the walk gives up). */
static int rd(struct walk *w, __u64 addr, __u64 *v)
{
	if (addr < w->lo || addr > w->hi - 8)
		return -1;
	__u64 x = *(const volatile __u64 *)addr;
	*v = x;
	if (w->mw && w->nreads < STUB_MEMO_READS) {
		__atomic_store_n(&w->mw->addr[w->nreads], addr, __ATOMIC_RELAXED);
		__atomic_store_n(&w->mw->val[w->nreads], x, __ATOMIC_RELAXED);
	}
	w->nreads++;
	return 0;
}

static int is_restorer(__u64 pc)
{
	return pc && (pc == stub_data.w.restorers[0] || pc == stub_data.w.restorers[1]);
}

/* The module of pc in the published index; NULL: none (the BPF walk may know one: give up). */
static const struct ht_unwind_module *module_of(struct walk *w, __u64 pc)
{
	__u32 n = w->ix->n < HT_SHARE_MODULES ? w->ix->n : HT_SHARE_MODULES;
	const struct ht_unwind_module *m = &w->ix->mods[w->last < n ? w->last : 0];

	if (n && pc >= m->start && pc < m->end)
		return m;
	__u32 a = 0, b = n;
	while (a < b) {
		__u32 mid = a + (b - a) / 2;
		if (w->ix->mods[mid].start <= pc)
			a = mid + 1;
		else
			b = mid;
	}
	if (!a || pc >= w->ix->mods[a - 1].end)
		return 0;
	w->last = a - 1;
	return &w->ix->mods[a - 1];
}

/* find_row of unwind.bpf.h: the last row whose pc is <= pc - bias; 0 when none.  -1: rows outside the file. */
static int find_row(const struct walk *w, const struct ht_unwind_module *m, __u64 pc, struct ht_unwind_row *row)
{
	__u64 rel = pc - m->bias;
	__u32 begin = m->row_begin, count = m->row_count;

	if (rel >> 32)
		return 0;
	if (begin > w->nrows || count > w->nrows - begin)
		return -1;
	__u32 lo = 0, hi = count;
	for (int i = 0; i < 32 && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;
		if (w->rows[begin + mid].pc <= (__u32)rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	*row = w->rows[begin + lo - 1];
	return 1;
}

/* --- the pc cache (struct stub_pc_entry) --- */

_Static_assert(sizeof(struct stub_pc_entry) == 32, "two entries a cache line");

static struct stub_pc_entry *pc_entry(__u64 pc)
{
	return &stub_data.pc_cache[(pc * 0x9E3779B97F4A7C15ull) >> (64 - STUB_PC_CACHE_BITS)];
}

/* 1: pc's row, as find_row gave it under the walk's gen and session, in *row; 0: a miss. */
static int cache_get(const struct walk *w, __u64 pc, struct ht_unwind_row *row)
{
	struct stub_pc_entry *e = pc_entry(pc);
	__u32 q = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

	if (q & 1 || __atomic_load_n(&e->pc, __ATOMIC_RELAXED) != pc ||
	    __atomic_load_n(&e->gen, __ATOMIC_RELAXED) != w->gen ||
	    __atomic_load_n(&e->session, __ATOMIC_RELAXED) != w->session)
		return 0;
	/* Field by field: the compiler makes no memcpy call of it (the stub has no libc). */
	row->pc = __atomic_load_n(&e->row.pc, __ATOMIC_RELAXED);
	row->cfa_off = __atomic_load_n(&e->row.cfa_off, __ATOMIC_RELAXED);
	row->rbp_off = __atomic_load_n(&e->row.rbp_off, __ATOMIC_RELAXED);
	row->cfa = __atomic_load_n(&e->row.cfa, __ATOMIC_RELAXED);
	row->rbp = __atomic_load_n(&e->row.rbp, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == q;
}

/*
 * Keep what the tables said of pc, if they still say it: the index read
 * is the one in force only while gen stands (the next change rewrites the
 * other one, the one after it this one).  An entry another writer holds
 * (another thread, or the level of this thread a signal handler
 * interrupted) is left to it.
 */
static void cache_put(const struct walk *w, __u64 pc, const struct ht_unwind_row *row)
{
	struct stub_pc_entry *e = pc_entry(pc);
	__u32 q = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&w->sh->gen, __ATOMIC_RELAXED) != w->gen || q & 1 ||
	    !__atomic_compare_exchange_n(&e->seq, &q, q + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&e->pc, pc, __ATOMIC_RELAXED);
	__atomic_store_n(&e->gen, w->gen, __ATOMIC_RELAXED);
	__atomic_store_n(&e->session, w->session, __ATOMIC_RELAXED);
	__atomic_store_n(&e->row.pc, row->pc, __ATOMIC_RELAXED);
	__atomic_store_n(&e->row.cfa_off, row->cfa_off, __ATOMIC_RELAXED);
	__atomic_store_n(&e->row.rbp_off, row->rbp_off, __ATOMIC_RELAXED);
	__atomic_store_n(&e->row.cfa, row->cfa, __ATOMIC_RELAXED);
	__atomic_store_n(&e->row.rbp, row->rbp, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, q + 2, __ATOMIC_RELEASE);
}

/*
 * The row of the frame at w->pc (looked up at pc - 1), from the cache or
 * the tables.  1: *row; 0: none (the frame unwinds by frame pointer);
 * -1: give up (no module of the index holds pc, rows outside the file).
 */
static int lookup(struct walk *w, struct ht_unwind_row *row)
{
	if (cache_get(w, w->pc, row))
		return row->cfa != HT_CFA_UNKNOWN;
	const struct ht_unwind_module *m = module_of(w, w->pc - 1);
	if (!m)
		return -1;
	int found = m->row_count ? find_row(w, m, w->pc - 1, row) : 0;
	if (found < 0)
		return -1;
	if (!found)
		*row = (struct ht_unwind_row){ .cfa = HT_CFA_UNKNOWN };
	cache_put(w, w->pc, row);
	return found;
}

/*
 * signal_frame of unwind.bpf.h: the registers the signal interrupted,
 * from the ucontext at sp.  1: go on; 0: stop (truncated); -1: give up.
 */
static int signal_frame(struct walk *w)
{
	__u64 rbp, rsp, rip;

	if (rd(w, w->sp + HT_SIGFRAME_RBP, &rbp))
		return -1;
	__u32 rbp_read = w->nreads - 1;
	if (rd(w, w->sp + HT_SIGFRAME_RSP, &rsp) || rd(w, w->sp + HT_SIGFRAME_RIP, &rip))
		return -1;
	if (!rip) {
		w->out->flags |= HT_STACK_TRUNCATED;
		return 0;
	}
	w->pc = HT_SIGFRAME_PC(rip);
	w->sp = rsp;
	w->fp = rbp;
	fp_from(w, rbp_read);
	return 1;
}

/* unwind_step of unwind.bpf.h.  1: next frame; 0: stop; -1: give up. */
static int cfi_step(struct walk *w, __u32 i)
{
	struct ht_stub_stack *o = w->out;
	struct ht_unwind_row row;
	__u64 ra, cfa;

	if (i >= stub_cfg.max_depth || o->depth >= HT_MAX_STACK_DEPTH) {
		o->flags |= HT_STACK_MAX_DEPTH;
		return 0;
	}
	o->pcs[o->depth++] = w->pc;
	w->hash = ht_stack_hash_step(w->hash, w->pc);
	int found;
	if (w->pc == w->seen_pc) {
		found = w->seen_found;
		row = w->seen_row;
	} else {
		found = lookup(w, &row);
		if (found < 0)
			return -1;
		w->seen_pc = w->pc;
		w->seen_found = found;
		if (found)
			w->seen_row = row;
	}
	if (found && row.cfa == HT_CFA_END)
		return 0;
	if (found && row.cfa == HT_CFA_SIGNAL)
		return signal_frame(w);
	if (!found || row.cfa == HT_CFA_UNKNOWN) {
		__u64 f0, f1;
		/* The BPF walk knows a restorer without a signal row from the kernel: its business. */
		if (is_restorer(w->pc))
			return -1;
		o->fp_frames++;
		fp_use(w);
		if (w->fp < stub_cfg.min_frame_addr)
			return 0;
		if (rd(w, w->fp, &f0))
			return -1;
		__u32 f0_read = w->nreads - 1;
		if (rd(w, w->fp + 8, &f1))
			return -1;
		w->sp = w->fp + 16;
		w->fp = f0;
		fp_from(w, f0_read);
		ra = f1;
	} else {
		if (row.cfa == HT_CFA_PLT)
			cfa = w->sp + 8 + ((w->pc & 15) >= 11 ? 8 : 0);
		else if (row.cfa == HT_CFA_RBP)
			fp_use(w), cfa = w->fp + (__s64)row.cfa_off;
		else
			cfa = w->sp + (__s64)row.cfa_off;
		if (rd(w, cfa - 8, &ra))
			return -1;
		/* Where the BPF walk's read fails it takes rbp as 0; this one cannot know that: give up. */
		if (row.rbp == HT_RBP_CFA) {
			if (rd(w, cfa + (__s64)row.rbp_off, &w->fp))
				return -1;
			fp_from(w, w->nreads - 1);
		} else if (row.rbp == HT_RBP_UNKNOWN) {
			w->fp = 0;
			w->fp_src = FP_NONE;
		}
		w->sp = cfa;
	}
	if (!ra)
		return 0;
	w->pc = ra;
	return 1;
}

/* The CFI tables in force, for a walk or a memo's check.  -1: none. */
static int tables(struct walk *w)
{
	const struct ht_share *sh = (const struct ht_share *)__atomic_load_n(&stub_data.w.share, __ATOMIC_ACQUIRE);

	if (!sh)
		return -1;
	__u32 gen = __atomic_load_n(&sh->gen, __ATOMIC_ACQUIRE);
	w->sh = sh;
	w->gen = gen;
	w->ix = &sh->index[gen & 1];
	w->rows = (const struct ht_unwind_row *)((const char *)sh + HT_SHARE_ROWS_OFF);
	w->nrows = sh->rows;
	return 0;
}

static int cfi_walk(struct walk *w)
{
	__u32 gen = w->gen;
	const struct ht_share *sh = w->sh;

	for (__u32 i = 0; i <= HT_MAX_STACK_DEPTH; i++) {
		int rc = cfi_step(w, i);
		if (rc < 0)
			return -1;
		if (!rc)
			break;
	}
	/* The index changed while it was read: what it said may be torn. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&sh->gen, __ATOMIC_RELAXED) == gen ? 0 : -1;
}

/*
 * walk_stack and fp_step of stack.bpf.h: frame 0 is the return address,
 * then rbp's chain.  A signal frame is left to the BPF walk (below), so
 * fp_step's interrupted frame never comes up here.
 */
static int fp_walk(struct walk *w)
{
	struct ht_stub_stack *o = w->out;
	__u64 fp = w->fp;

	w->entry_fp_used = 1;   /* every word read is a frame's: all are checked */
	o->pcs[0] = w->pc;
	o->depth = 1;
	w->hash = ht_stack_hash_step(w->hash, w->pc);
	for (__u32 i = 0; i < HT_MAX_STACK_DEPTH; i++) {
		__u32 n = i + 1;
		__u64 f0, f1;
		if (fp < stub_cfg.min_frame_addr)
			break;
		if (n >= stub_cfg.max_depth || n >= HT_MAX_STACK_DEPTH) {
			o->flags = HT_STACK_MAX_DEPTH;
			break;
		}
		if (rd(w, fp, &f0) || rd(w, fp + 8, &f1))
			return -1;
		if (!f1)
			break;
		/* A signal frame: the BPF walk follows it when the kernel told it the thread's restorer. */
		if (is_restorer(f1))
			return -1;
		o->pcs[n] = f1;
		o->depth = n + 1;
		w->hash = ht_stack_hash_step(w->hash, f1);
		fp = f0;
	}
	return 0;
}

/* The BPF side then reads the frames only for a new stack. */
void stub_hash_frames(struct ht_stub_stack *out)
{
	__u64 h = HT_STACK_HASH_SEED;

	for (__u32 i = 0; i < out->depth && i < HT_MAX_STACK_DEPTH; i++)
		h = ht_stack_hash_step(h, out->pcs[i]);
	out->hash = ht_stack_hash_end(h);
}

/* --- the threads' last walks (struct stub_memo) --- */

_Static_assert(sizeof(struct stub_memo) == 2136, "docs/fast-path.md gives its size");

/* The slot of a walk from the thread's call at pc with its stack at sp. */
static struct stub_memo *memo_of(__u64 tp, const struct stub_regs *r)
{
	__u64 h = (tp * 0x9E3779B97F4A7C15ull ^ r->pc) * 0xC2B2AE3D27D4EB4Full ^ r->sp;

	return &stub_data.memo[(h * 0x165667B19E3779F9ull) >> (64 - STUB_MEMO_BITS)];
}

/*
 * The thread's last walk into *out, if it was from the same registers
 * under the same tables and every word it read holds what it held: then
 * this walk would read the same words at the same places and find the
 * same frames.  1: *out is that walk's; 0: walk.  Every address is
 * checked against the proved range before it is read (a memo being
 * written may hold anything until seq says it is whole).
 */
static int memo_get(const struct walk *w, struct stub_memo *m, const struct stub_regs *r, __u64 tp)
{
	__u32 q = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
	struct ht_stub_stack *o = w->out;

	if (q & 1 || __atomic_load_n(&m->tp, __ATOMIC_RELAXED) != tp ||
	    __atomic_load_n(&m->pc, __ATOMIC_RELAXED) != r->pc || __atomic_load_n(&m->sp, __ATOMIC_RELAXED) != r->sp ||
	    (__atomic_load_n(&m->entry_fp, __ATOMIC_RELAXED) && __atomic_load_n(&m->fp, __ATOMIC_RELAXED) != r->fp) ||
	    __atomic_load_n(&m->gen, __ATOMIC_RELAXED) != w->gen ||
	    __atomic_load_n(&m->session, __ATOMIC_RELAXED) != w->session)
		return 0;
	__u32 n = __atomic_load_n(&m->nreads, __ATOMIC_RELAXED);
	__u32 depth = __atomic_load_n(&m->depth, __ATOMIC_RELAXED);
	if (n > STUB_MEMO_READS || !depth || depth > STUB_MEMO_FRAMES)
		return 0;
	__u64 differ = 0, any0 = __atomic_load_n(&m->anyval[0], __ATOMIC_RELAXED);
	__u64 any1 = __atomic_load_n(&m->anyval[1], __ATOMIC_RELAXED);
	for (__u32 i = 0; i < n; i++) {
		__u64 a = __atomic_load_n(&m->addr[i], __ATOMIC_RELAXED);
		if (a < w->lo || a > w->hi - 8)
			return 0;
		/* A saved rbp no step used: it must be readable where it was, whatever it holds. */
		__u64 keep = (i < 64 ? any0 >> i : any1 >> (i - 64)) & 1 ? 0 : ~0ull;
		differ |= (*(const volatile __u64 *)a ^ __atomic_load_n(&m->val[i], __ATOMIC_RELAXED)) & keep;
	}
	if (differ)
		return 0;
	o->depth = depth;
	o->flags = __atomic_load_n(&m->flags, __ATOMIC_RELAXED);
	o->fp_frames = __atomic_load_n(&m->fp_frames, __ATOMIC_RELAXED);
	o->hash = __atomic_load_n(&m->hash, __ATOMIC_RELAXED);
	for (__u32 i = 0; i < depth; i++)
		o->pcs[i] = __atomic_load_n(&m->pcs[i], __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&m->seq, __ATOMIC_RELAXED) == q;
}

/* Hold the slot for writing, the walk's words to go in it (one another writer holds is left to it). */
static struct stub_memo *memo_hold(struct stub_memo *m, __u32 *q)
{
	*q = __atomic_load_n(&m->seq, __ATOMIC_RELAXED);
	if (*q & 1 || !__atomic_compare_exchange_n(&m->seq, q, *q + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	return m;
}

/* A held slot made whole: the walk's, if it was whole and fits (ok), else one that matches no walk (tp 0). */
static void memo_release(const struct walk *w, struct stub_memo *m, __u32 q, int ok, const struct stub_regs *r,
			 __u64 tp)
{
	const struct ht_stub_stack *o = w->out;

	if (ok && w->nreads <= STUB_MEMO_READS && o->depth && o->depth <= STUB_MEMO_FRAMES) {
		__atomic_store_n(&m->tp, tp, __ATOMIC_RELAXED);
		__atomic_store_n(&m->pc, r->pc, __ATOMIC_RELAXED);
		__atomic_store_n(&m->sp, r->sp, __ATOMIC_RELAXED);
		__atomic_store_n(&m->fp, r->fp, __ATOMIC_RELAXED);
		__atomic_store_n(&m->entry_fp, (__u32)w->entry_fp_used, __ATOMIC_RELAXED);
		__atomic_store_n(&m->anyval[0], w->fp_loads[0] & ~w->fp_used[0], __ATOMIC_RELAXED);
		__atomic_store_n(&m->anyval[1], w->fp_loads[1] & ~w->fp_used[1], __ATOMIC_RELAXED);
		__atomic_store_n(&m->gen, w->gen, __ATOMIC_RELAXED);
		__atomic_store_n(&m->session, w->session, __ATOMIC_RELAXED);
		__atomic_store_n(&m->nreads, w->nreads, __ATOMIC_RELAXED);
		__atomic_store_n(&m->depth, o->depth, __ATOMIC_RELAXED);
		__atomic_store_n(&m->flags, o->flags, __ATOMIC_RELAXED);
		__atomic_store_n(&m->fp_frames, o->fp_frames, __ATOMIC_RELAXED);
		__atomic_store_n(&m->hash, o->hash, __ATOMIC_RELAXED);
		for (__u32 i = 0; i < o->depth; i++)
			__atomic_store_n(&m->pcs[i], o->pcs[i], __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&m->tp, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&m->seq, q + 2, __ATOMIC_RELEASE);
}

/*
 * The memo keeps native frames only: the same registers in CPython's loop
 * run other Python lines from one call to the next.
 */
static int with_python(struct ht_stub_stack *out, __u64 tp, int python)
{
	if (python && py_merge(out, tp))
		stub_hash_frames(out);
	return 0;
}

int stub_walk(const struct stub_regs *r, __u64 tp, struct ht_stub_stack *out, int python)
{
	struct walk w;
	int rc;

	/* Field by field, what every walk reads: zeroing the whole struct cost churn ~10 ns a pair (memo hits). */
	w.pc = r->pc, w.sp = r->sp, w.fp = r->fp;
	w.sh = 0, w.ix = 0, w.rows = 0, w.nrows = 0, w.gen = 0;
	w.last = 0, w.seen_pc = 0, w.seen_found = 0;
	w.out = out, w.hash = HT_STACK_HASH_SEED, w.mw = 0, w.nreads = 0;
	w.fp_src = FP_ENTRY, w.fp_loads[0] = w.fp_loads[1] = w.fp_used[0] = w.fp_used[1] = 0, w.entry_fp_used = 0;
	out->depth = out->flags = out->fp_frames = out->pad = 0;
	if (stub_cfg.walk == STUB_WALK_NONE || stack_range(tp, r->sp - 8, &w.lo, &w.hi))
		return -1;
	/*
	 * Below the entry's sp are the stub's own frames, this one's among
	 * them: what a garbage frame pointer finds there now is not what the
	 * BPF walk would find later.  Those reads are the BPF side's.
	 */
	w.lo = r->sp - 8;
	/* Before the tables: what was kept under an installation's session is of its tables or a later one's. */
	w.session = (__u32)__atomic_load_n(&stub_data.w.session, __ATOMIC_ACQUIRE);
	if (stub_cfg.walk == STUB_WALK_CFI && tables(&w))
		return -1;
	struct stub_memo *m = memo_of(tp, r);
	if (memo_get(&w, m, r, tp))
		return with_python(out, tp, python);
	out->depth = out->flags = out->fp_frames = 0;
	__u32 q;
	w.mw = memo_hold(m, &q);
	rc = stub_cfg.walk == STUB_WALK_FP ? fp_walk(&w) : cfi_walk(&w);
	if (!rc)
		out->hash = ht_stack_hash_end(w.hash);
	if (w.mw)
		memo_release(&w, w.mw, q, !rc, r, tp);
	return rc ? rc : with_python(out, tp, python);
}
