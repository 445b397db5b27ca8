// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Python frames in a walked stack: each native frame of CPython's loop
 * (_PyEval_EvalFrameDefault) gives way to the Python frames it was
 * running, innermost first, so that an allocation sits under the line of
 * Python that made it, with the C above and below kept.
 *
 * What is read, and why it cannot fault: only the calling thread's own
 * frame chain, and only while the thread holds the GIL (its thread state
 * is the one attached).  That is what CPython's own tracemalloc reads in
 * the same place, at every allocation: the frames of an attached thread
 * are live (its data stack, or a running generator), each holds a
 * reference to its code object, and only the thread itself pushes or
 * pops them, which it cannot do while it is in here.  Of the code object
 * (live: the frame holds a reference) only what tells it from another is
 * read; its address and the instruction's offset, and that identity, are
 * the frame's two words, and heaptrace reads the name, file and line
 * table later (user/symbolize/pyframes.c).  A thread without the GIL (a C extension
 * that released it) keeps its native stack.
 */
#include "python.h"

extern const struct stub_cfg stub_cfg __attribute__((visibility("hidden")));

#define PY (stub_cfg.py)

static inline __u64 ld64(__u64 a)
{
	return *(const volatile __u64 *)a;
}

/* A pointer that may be one: user space, aligned, above the lowest mapping (no read tells more). */
static inline int plausible(__u64 p)
{
	return p >= stub_cfg.min_frame_addr && p <= HT_PY_CODE_MASK && !(p & 7);
}

/* The thread's own attached thread state, or 0. */
static __u64 own_tstate(__u64 tp)
{
	if (PY.tstate_from == STUB_PY_GLOBAL) {
		__u64 ts = __atomic_load_n((const __u64 *)PY.tstate, __ATOMIC_RELAXED);
		/* The GIL holder's: ours only if its thread is this one (pthread_self() is the thread pointer). */
		return plausible(ts) && ld64(ts + PY.thread_id) == tp ? ts : 0;
	}
	/*
	 * libpython's TLS block, through this thread's dtv (x86-64 TLS ABI:
	 * the dtv pointer at tp + 8; glibc's entries of 16 bytes, the
	 * block's address first, their count in the entry before the first).
	 * The module's index is in its GOT, the loader's to fill.
	 */
	__u64 modid = PY.modid_got ? ld64(PY.modid_got) : PY.modid, dtv = ld64(tp + 8);
	if (!modid || !plausible(dtv) || modid > ld64(dtv - 16))
		return 0;
	__u64 block = ld64(dtv + 16 * modid);
	if (!plausible(block) || block == ~0ull)
		return 0;
	__u64 ts = ld64(block + PY.tstate);
	return plausible(ts) ? ts : 0;
}

static inline int in_eval(__u64 pc)
{
	/* A return address: the call is the instruction before it. */
	return (pc > PY.eval_lo[0] && pc <= PY.eval_hi[0]) || (pc > PY.eval_lo[1] && pc <= PY.eval_hi[1]);
}

/* The frame's two words (HT_PY_FRAME): its code object and instruction, and the code's identity; 0: none to show. */
static __u64 frame_word(__u64 f, __u64 *ident)
{
	__u64 code = ld64(f + PY.frame_code), units;

	if (!plausible(code))
		return 0;
	/* The frame holds a reference to its code: the code object is live, and these fields with it. */
	*ident = ht_py_ident(ld64(code + PY.code_name), ld64(code + PY.code_filename),
			     *(const volatile __u32 *)(code + PY.code_firstlineno));
	if (PY.kind == STUB_PY_FRAMEOBJ) {
		__s32 lasti = *(const volatile __s32 *)(f + PY.frame_instr);
		units = lasti < 0 ? 0 : (__u64)lasti;
	} else {
		/* 3.11 and 3.12 keep the last instruction run (one before the first at the start), 3.13 the next. */
		__u64 at = ld64(f + PY.frame_instr), first = code + PY.code_units;
		units = at > first ? (at - first) / 2 : 0;
	}
	if (units > HT_PY_INSTR_MAX)
		units = HT_PY_INSTR_MAX;
	return HT_PY_FRAME | units << HT_PY_INSTR_SHIFT | code;
}

int py_merge(struct ht_stub_stack *st, __u64 tp)
{
	__u64 native[HT_MAX_STACK_DEPTH];
	__u32 n = st->depth, out = 0, max = stub_cfg.max_depth < HT_MAX_STACK_DEPTH ? stub_cfg.max_depth : HT_MAX_STACK_DEPTH;
	__u32 i, cut = 0;

	if (PY.kind == STUB_PY_NONE)
		return 0;
	for (i = 0; i < n && !in_eval(st->pcs[i]); i++)
		;
	if (i == n)
		return 0;       /* no Python code under this call */
	__u64 ts = own_tstate(tp);
	if (!ts)
		return 0;
	__u64 at = PY.cframe == STUB_PY_NO_FIELD ? ts : ld64(ts + PY.cframe);
	if (!plausible(at))
		return 0;
	__u64 f = ld64(at + PY.current_frame);
	for (i = 0; i < n; i++)
		native[i] = st->pcs[i];
	/* At most as many Python frames as a stack holds: a cycle in a chain read amiss ends there. */
	__u32 budget = HT_MAX_STACK_DEPTH;
	for (i = 0; i < n && out < max; i++) {
		if (!in_eval(native[i]) || !f) {
			st->pcs[out++] = native[i];
			continue;
		}
		/* This loop's frames: up to its entry frame. */
		while (plausible(f) && budget) {
			__u64 next = ld64(f + PY.frame_previous), w;
			int last = PY.kind == STUB_PY_FRAMEOBJ;
			if (PY.kind == STUB_PY_OWNER &&
			    *(const volatile __u8 *)(f + PY.frame_mark) == PY.owner_cstack) {
				f = next;
				break;
			}
			if (PY.kind == STUB_PY_ENTRY_FLAG && *(const volatile __u8 *)(f + PY.frame_mark))
				last = 1;
			budget--;
			__u64 ident;
			if ((w = frame_word(f, &ident))) {
				if (out + 2 > max) {
					cut = 1;
					break;
				}
				st->pcs[out++] = w;
				st->pcs[out++] = ident;
			}
			f = next;
			if (last)
				break;
		}
		if (!plausible(f))
			f = 0;
	}
	if (cut || i < n)
		st->flags |= HT_STACK_MAX_DEPTH;
	st->depth = out;
	return 1;
}
