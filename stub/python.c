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
 * read, and the line table: its address and the line run, and that
 * identity, are the frame's two words, and heaptrace reads the name and
 * file later (user/symbolize/pyframes.c).  A thread without the GIL (a C extension
 * that released it) keeps its native stack.
 */
#include "python.h"

extern const struct stub_cfg stub_cfg __attribute__((visibility("hidden")));
extern struct stub_data stub_data __attribute__((visibility("hidden")));

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
	return pc > PY.eval_lo && pc <= PY.eval_hi;
}

#define LINE_TABLE_MAX (1u << 20)

/* A location table's varint (6 bits a byte, bit 6: more), within [*p, end). */
static __u32 varint(__u64 *p, __u64 end)
{
	__u32 v = 0, shift = 0;
	__u8 b;

	do {
		if (*p >= end || shift > 24)
			return v;
		b = *(const volatile __u8 *)(*p)++;
		v |= (__u32)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

/*
 * The line of instruction units of code, from its line table, as
 * PyCode_Addr2Line finds it: 3.10's (bytes, line delta) pairs, or the
 * locations of 3.11 and later (PEP 657: an entry's first byte has bit 7,
 * its kind in bits 3-6, its length in code units in bits 0-2, then the
 * line delta by kind).  Counted from the first line; HT_PY_LINE_UNKNOWN
 * for none.  The table is the live code object's: read as the stack is.
 */
static __u64 find_line(__u64 code, __u64 units)
{
	__u64 lt = ld64(code + PY.code_linetable), p, end, n;
	__s64 line = 0;
	__u64 at = 0;

	if (!plausible(lt) || (n = ld64(lt + 16)) > LINE_TABLE_MAX)
		return HT_PY_LINE_UNKNOWN;
	p = lt + 32;
	end = p + n;
	if (PY.kind == STUB_PY_FRAMEOBJ) {
		for (; p + 1 < end; p += 2) {
			__s8 d = *(const volatile __s8 *)(p + 1);
			if (d != -128)
				line += d;
			at += *(const volatile __u8 *)p;
			if (units * 2 < at)
				return d == -128 || line < 0 || line >= (__s64)HT_PY_LINE_UNKNOWN ? HT_PY_LINE_UNKNOWN : (__u64)line;
		}
		return HT_PY_LINE_UNKNOWN;
	}
	while (p < end) {
		__u8 b = *(const volatile __u8 *)p++;
		__u32 kind = b >> 3 & 15, len = (b & 7) + 1;
		if (kind == 13 || kind == 14) {
			__u32 v = varint(&p, end);
			line += v & 1 ? -(__s64)(v >> 1) : (__s64)(v >> 1);
		} else if (kind >= 10 && kind <= 12) {
			line += kind - 10;
		}
		/* The rest of the entry (columns): up to the next entry's first byte. */
		while (p < end && !(*(const volatile __u8 *)p & 0x80))
			p++;
		at += len;
		if (units < at)
			return kind == 15 || line < 0 || line >= (__s64)HT_PY_LINE_UNKNOWN ? HT_PY_LINE_UNKNOWN : (__u64)line;
	}
	return HT_PY_LINE_UNKNOWN;
}

/* find_line, through the lines already found (struct stub_data's py_lines). */
static __u64 line_of(__u64 code, __u64 ident, __u64 units)
{
	__u64 h = (code * 0x9e3779b97f4a7c15ull ^ ident) * 0xc2b2ae3d27d4eb4full ^ units * 0x165667b19e3779f9ull;
	__u64 *e = &stub_data.py_lines[h >> (64 - STUB_PY_LINE_BITS)];
	__u64 v = __atomic_load_n(e, __ATOMIC_RELAXED);

	if ((v & ~0xffffull) == (h & ~0xffffull))
		return v & 0xffff;
	__u64 line = find_line(code, units);
	__atomic_store_n(e, (h & ~0xffffull) | line, __ATOMIC_RELAXED);
	return line;
}

/* A compact ASCII str's characters into dst (its last cap if longer); its length, or HT_PY_NAME_UNREAD. */
static __u16 copy_str(__u64 str, char *dst, __u32 cap)
{
	__u32 state;
	__u64 len;

	if (!plausible(str))
		return HT_PY_NAME_UNREAD;
	state = *(const volatile __u32 *)(str + 32);
	len = ld64(str + 16);
	if (!(state >> 5 & 1) || !(state >> 6 & 1) || len >= HT_PY_NAME_UNREAD)
		return HT_PY_NAME_UNREAD;
	__u64 from = str + PY.unicode_ascii + (len > cap ? len - cap : 0);
	for (__u32 i = 0; i < cap && i < len; i++)
		dst[i] = *(const volatile char *)(from + i);
	return (__u16)len;
}

/* The code object's names into the log, the first time its identity is met (stub.h's struct stub_py_code). */
static void log_code(__u64 code, __u64 ident)
{
	__u64 *seen = &stub_data.py_seen[(ident * 0x9e3779b97f4a7c15ull) >> (64 - STUB_PY_SEEN_BITS)];

	if (__atomic_load_n(seen, __ATOMIC_RELAXED) == ident)
		return;
	__atomic_store_n(seen, ident, __ATOMIC_RELAXED);
	__u32 i = __atomic_fetch_add(&stub_data.py_log_n, 1, __ATOMIC_RELAXED);
	if (i >= STUB_PY_LOG)
		return;
	struct stub_py_code *e = &stub_data.py_log[i];
	e->code = code;
	e->firstlineno = *(const volatile __s32 *)(code + PY.code_firstlineno);
	e->name_len = copy_str(ld64(code + PY.code_name), e->name, STUB_PY_NAME);
	e->file_len = copy_str(ld64(code + PY.code_filename), e->file, STUB_PY_FILE);
	__atomic_store_n(&e->ident, ident, __ATOMIC_RELEASE);
}

/* The frame's two words (HT_PY_FRAME): its code object and line, and the code's identity; 0: none to show. */
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
	log_code(code, *ident);
	return HT_PY_FRAME | line_of(code, *ident, units) << HT_PY_LINE_SHIFT | code;
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
		/* This loop's frames: up to its entry frame.  None (a loop about to run its first): the native frame stays. */
		__u32 group = out;
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
		if (out == group && !cut)
			st->pcs[out++] = native[i];
		if (!plausible(f))
			f = 0;
	}
	if (cut || i < n)
		st->flags |= HT_STACK_MAX_DEPTH;
	st->depth = out;
	return 1;
}
