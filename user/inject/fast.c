/*
 * The fast entries (fast.h), as x86-64 machine code.  Only %r11 (scratch
 * at a call in the System V ABI, as entry_i uses it) and the flags are
 * changed, and %rax, pushed and popped around the thread's countdown and
 * a free's filter: every argument register reaches the original as it
 * came.  A wrapper's forward sets its function's arguments, as the
 * wrapper's own code would.
 */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "inject/fast.h"
#include "insn/relocate.h"
#include "probe/plan.h"

/* The System V argument registers, by argument number (1-based): their x86 numbers. */
static const uint8_t arg_reg[7] = { 0, 7 /* rdi */, 6 /* rsi */, 2 /* rdx */, 1 /* rcx */, 8 /* r8 */, 9 /* r9 */ };
#define R11 11

bool fast_eligible(const struct stub_fn *fn, uint64_t sample_rate)
{
	if (!sample_rate)
		return false;
	if (fn->flags & STUB_FN_FORWARD)
		return true;
	if (fn->n_mem)
		return false;
	if (fn->flags & STUB_FN_FREE)
		return (fn->flags & STUB_FN_PTR_FAST) && !(fn->flags & STUB_FN_RESET) && fn->ptr_arg >= 1 &&
		       fn->ptr_arg <= 6;
	if (!(fn->flags & STUB_FN_SIZE_FAST) || fn->size_a < 1 || fn->size_a > 6 || fn->size_b > 6 || fn->size_k != 1 ||
	    (fn->flags & (STUB_FN_SIZE_AT_RET | STUB_FN_PAGE_ROUND | STUB_FN_RESET)))
		return false;
	/* A realloc: one that may call others is called, its thread marked inside it (realloc_entry()). */
	if (fn->old_arg)
		return fn->old_arg <= 6 && !fn->size_b;
	return !(fn->flags & STUB_FN_NESTS) || fn->small_max;
}

struct emit {
	uint8_t *p, *start;
	uint64_t at;            /* the address of start in the target */
};

static void b(struct emit *e, int n, ...)
{
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		*e->p++ = (uint8_t)va_arg(ap, int);
	va_end(ap);
}

static void u32(struct emit *e, uint32_t v)
{
	memcpy(e->p, &v, 4);
	e->p += 4;
}

static uint64_t here(const struct emit *e)
{
	return e->at + (uint64_t)(e->p - e->start);
}

/* A rip-relative displacement to `to`, for an instruction that ends `tail` bytes after it. */
static void rip(struct emit *e, uint64_t to, int tail)
{
	u32(e, (uint32_t)(int32_t)(to - (here(e) + 4 + tail)));
}

/* A jcc rel32 (0x0f cc) or jmp rel32 (cc 0): its displacement's place, filled by fix(). */
static uint8_t *jump(struct emit *e, uint8_t cc)
{
	if (cc)
		b(e, 2, 0x0f, cc);
	else
		b(e, 1, 0xe9);
	uint8_t *d = e->p;
	u32(e, 0);
	return d;
}

static void fix(struct emit *e, uint8_t *d, uint64_t to)
{
	int32_t rel = (int32_t)(to - (e->at + (uint64_t)(d - e->start) + 4));

	memcpy(d, &rel, 4);
}

/* mov %reg, %r11 */
static void mov_to_r11(struct emit *e, uint8_t reg)
{
	b(e, 3, 0x48 | (reg >= 8 ? 4 : 0) | 1, 0x89, 0xc0 | (reg & 7) << 3 | (R11 & 7));
}

#define JE 0x84
#define JNE 0x85
#define JAE 0x83
#define JL 0x8c
#define JA 0x87

_Static_assert(sizeof(struct stub_count) == 64, "count_slot()'s shift");
_Static_assert(STUB_FAST_EXIT + 64 <= STUB_GADGET_OFF, "the fast entries' exit overlaps the gadget");

/* mov $index, %r11d; jmp handler: on to the handler as entry_i goes, index its function's (and flags). */
static void to_handler(struct emit *e, uint32_t index, uint64_t handler)
{
	b(e, 2, 0x41, 0xbb);
	u32(e, index);
	fix(e, jump(e, 0), handler);
}

/* push %rax; mov %fs:0, %rax: the thread pointer, %rax given back by the caller's pop. */
static void push_tp(struct emit *e)
{
	b(e, 1, 0x50);
	b(e, 9, 0x64, 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0);
}

/* On to the original: its displaced code, relocated here, or orig_i. */
static int to_original(struct emit *e, const struct fast_at *at, uint64_t orig)
{
	char why[160];
	size_t len;

	if (!at->code) {
		b(e, 2, 0xff, 0x25);                                    /* jmp *fns[i].orig(%rip) */
		rip(e, orig, 0);
		return 0;
	}
	if (relocate_prologue(at->code, at->code_len, at->func_size, at->addr, here(e), at->skip, e->p, &len, why,
			      sizeof(why)) != (int)at->displaced)
		return -1;
	e->p += len;
	return 0;
}

/*
 * A wrapper's: on while its slot holds a value it may forward on (the
 * function behind it, heaptrace's jump to it, or that function's fast
 * entry), else the handler.  On is the function's fast entry, called as
 * the wrapper calls it: (*ctx, the wrapper's arguments), when the
 * wrapper's own test passes (a size past PY_SSIZE_T_MAX returns NULL
 * there, a realloc's too; a calloc's factors under 2^31 pass it); else
 * the wrapper.  Five
 * words after the code: the slot's address, the three values, ctx's
 * address.
 */
static int forward(struct emit *e, int i, const struct probe *p, const struct fast_at *at, uint64_t orig)
{
	uint64_t want[3] = { p->fwd_func ? p->fwd_func + at->bias : 0, at->impl_entry, at->jump },
		 c = fast_entry_at(at->base, i + 1) - 40, slot = p->fwd_slot + at->bias, ctx = p->fwd_ctx + at->bias;
	uint8_t *consts = e->start + (c - e->at), *fwd[3], *wrapper = NULL;
	int n = 0;

	if (!p->fwd_slot || (!want[0] && !want[1] && !want[2]))
		return -1;
	memcpy(consts, &slot, 8);
	memcpy(consts + 8, want, 24);
	memcpy(consts + 32, &ctx, 8);
	b(e, 3, 0x4c, 0x8b, 0x1d);                                      /* mov slot's address(%rip), %r11 */
	rip(e, c, 0);
	b(e, 3, 0x4d, 0x8b, 0x1b);                                      /* mov (%r11), %r11 */
	for (int k = 0; k < 3; k++)
		if (want[k]) {
			b(e, 3, 0x4c, 0x3b, 0x1d);                      /* cmp value(%rip), %r11; je forward */
			rip(e, c + 8 + 8 * k, 0);
			fwd[n++] = jump(e, JE);
		}
	to_handler(e, (uint32_t)i, at->handler);
	for (int k = 0; k < n; k++)
		fix(e, fwd[k], here(e));
	if (at->impl_entry && p->fwd_ctx && p->fwd_member >= 1 && p->fwd_member <= 4) {
		if (p->fwd_member == 1) {
			b(e, 3, 0x48, 0x85, 0xff);                      /* test %rdi, %rdi; js wrapper */
			wrapper = jump(e, 0x88);
		} else if (p->fwd_member == 3) {
			b(e, 3, 0x48, 0x85, 0xf6);                      /* test %rsi, %rsi; js wrapper */
			wrapper = jump(e, 0x88);
			b(e, 3, 0x48, 0x89, 0xf2);                      /* mov %rsi, %rdx */
		} else if (p->fwd_member == 2) {
			b(e, 3, 0x49, 0x89, 0xfb);                      /* mov %rdi, %r11; or %rsi, %r11 */
			b(e, 3, 0x49, 0x09, 0xf3);
			b(e, 4, 0x49, 0xc1, 0xeb, 31);                  /* shr $31, %r11; jne wrapper */
			wrapper = jump(e, JNE);
			b(e, 3, 0x48, 0x89, 0xf2);                      /* mov %rsi, %rdx */
		}
		b(e, 3, 0x48, 0x89, 0xfe);                              /* mov %rdi, %rsi */
		b(e, 3, 0x48, 0x8b, 0x3d);                              /* mov ctx's address(%rip), %rdi */
		rip(e, c + 32, 0);
		b(e, 3, 0x48, 0x8b, 0x3f);                              /* mov (%rdi), %rdi */
		fix(e, jump(e, 0), at->impl_entry);
		if (wrapper)
			fix(e, wrapper, here(e));
	}
	if (to_original(e, at, orig))
		return -1;
	return here(e) <= c ? 0 : -1;
}

/* Data of a stub below 2 GiB (a non-PIE program's): reached by a sign-extended 32-bit address, no base loaded. */
static bool low(uint64_t addr)
{
	return addr + 4096 < (1ull << 31);
}

/* The memory operand of the slot's field off (count_slot()'s %r11), for the ModRM reg field reg. */
static void slot_field(struct emit *e, uint64_t counts, int reg, size_t off)
{
	if (low(counts)) {
		b(e, 1, 0x83 | (reg & 7) << 3);                         /* disp32(%r11) */
		u32(e, (uint32_t)(counts + off));
	} else {
		b(e, 2, 0x43 | (reg & 7) << 3, (int)off);               /* disp8(%r11) */
	}
}

/*
 * The thread's countdown (struct stub_count), as stub/decide.c's
 * countdown_of() finds it: %rax pushed (the caller pops it), %r11 its
 * slot's offset in the table (counts low) or its address; on to slow
 * (%rax still pushed) when another thread holds it or none does yet (the
 * handler takes it).
 */
static uint8_t *count_slot(struct emit *e, uint64_t base, uint64_t counts)
{
	push_tp(e);
	b(e, 3, 0x49, 0x89, 0xc3);                                      /* mov %rax, %r11 */
	b(e, 4, 0x4c, 0x0f, 0xaf, 0x1d);                                /* imul K(%rip), %r11 */
	rip(e, base + STUB_FAST_HASH_K, 0);
	b(e, 4, 0x49, 0xc1, 0xeb, 64 - STUB_COUNT_BITS);                /* shr $(64 - bits), %r11 */
	b(e, 4, 0x49, 0xc1, 0xe3, 6);                                   /* shl $6, %r11 */
	if (!low(counts)) {
		b(e, 3, 0x4c, 0x03, 0x1d);                              /* add counts(%rip), %r11 */
		rip(e, base + STUB_FAST_COUNTS, 0);
	}
	b(e, 2, 0x49, 0x39);                                            /* cmp %rax, tp(slot); jne */
	slot_field(e, counts, 0, offsetof(struct stub_count, tp));
	return jump(e, JNE);
}

/* cmpq $0, inside(slot): a realloc of this thread's is running, which this call may be nested in. */
static void cmp_inside(struct emit *e, uint64_t counts)
{
	b(e, 2, 0x49, 0x83);
	slot_field(e, counts, 7, offsetof(struct stub_count, inside));
	b(e, 1, 0);
}

/*
 * The thread is inside a realloc (cmp_inside()'s jne lands here, %rax
 * pushed): a call below the realloc's entry from its object's code (its
 * malloc of the block it moves) is its business, straight on to *to_orig;
 * else the handler (*to_slow_pop with %rax pushed, *to_slow), whose
 * nested() tells a tail jump, a signal handler's call, and a mark that a
 * longjmp out of the realloc left (this call above it).
 */
static void inside_check(struct emit *e, uint64_t counts, uint8_t **to_slow_pop, uint8_t **to_orig, uint8_t **to_slow)
{
	b(e, 5, 0x48, 0x8d, 0x44, 0x24, 0x08);                          /* lea 8(%rsp), %rax: this call's entry sp */
	b(e, 2, 0x49, 0x3b);                                            /* cmp inside(slot), %rax; jae slow_pop */
	slot_field(e, counts, 0, offsetof(struct stub_count, inside));
	*to_slow_pop = jump(e, JAE);
	b(e, 5, 0x48, 0x8b, 0x44, 0x24, 0x08);                          /* mov 8(%rsp), %rax: the return address */
	b(e, 2, 0x49, 0x2b);                                            /* sub code_lo(slot), %rax */
	slot_field(e, counts, 0, offsetof(struct stub_count, code_lo));
	b(e, 2, 0x49, 0x3b);                                            /* cmp code_len(slot), %rax */
	slot_field(e, counts, 0, offsetof(struct stub_count, code_len));
	b(e, 1, 0x58);                                                  /* pop %rax; jb original; jmp slow */
	*to_orig = jump(e, 0x82);
	*to_slow = jump(e, 0);
}

/* sub %size, left(slot): the countdown less the size, whose sign the caller tests. */
static void sub_left(struct emit *e, uint64_t counts, uint8_t size)
{
	b(e, 2, 0x49 | (size >= 8 ? 4 : 0), 0x29);
	slot_field(e, counts, size, offsetof(struct stub_count, left));
}

/*
 * The filter's byte of the block in reg (filter_of() in stub/decide.c),
 * compared with 0: the caller's jcc follows.  The block 0 jumps to the
 * returned place first.
 */
static uint8_t *filter_byte(struct emit *e, uint8_t reg, const struct fast_at *at)
{
	uint64_t base = at->base, filter = base + STUB_DATA_OFF + offsetof(struct stub_data, filter);

	mov_to_r11(e, reg);
	b(e, 3, 0x4d, 0x85, 0xdb);                                      /* test %r11, %r11; je */
	uint8_t *null = jump(e, JE);
	b(e, 4, 0x49, 0xc1, 0xeb, (int)at->granule);                    /* shr $granule, %r11 */
	b(e, 4, 0x4c, 0x0f, 0xaf, 0x1d);                                /* imul K(%rip), %r11 */
	rip(e, base + STUB_FAST_HASH_K, 0);
	b(e, 4, 0x49, 0xc1, 0xeb, 64 - STUB_FILTER_BITS);               /* shr $(64 - bits), %r11 */
	if (low(filter)) {
		b(e, 3, 0x41, 0x80, 0xbb);                              /* cmpb $0, filter(%r11) */
		u32(e, (uint32_t)filter);
		b(e, 1, 0);
	} else {
		b(e, 1, 0x50);                                          /* push %rax */
		b(e, 3, 0x48, 0x8d, 0x05);                              /* lea filter(%rip), %rax */
		rip(e, filter, 0);
		b(e, 5, 0x42, 0x80, 0x3c, 0x18, 0);                     /* cmpb $0, (%rax,%r11) */
		b(e, 1, 0x58);                                          /* pop %rax */
	}
	return null;
}

int fast_exit_emit(uint8_t *img, uint64_t base)
{
	uint8_t buf[128];
	uint64_t counts = base + STUB_DATA_OFF + offsetof(struct stub_data, count);
	struct emit e = { .p = buf, .start = buf, .at = base + STUB_FAST_EXIT };

	/*
	 * A realloc's fast entry called the function from here, its slot (as
	 * count_slot() left %r11) pushed below its entry's stack pointer: the
	 * slot popped, the thread's mark cleared where the slot is still its
	 * own (one that hashes alike may have taken it over meanwhile,
	 * clearing it), and back to the caller with the function's %rax and
	 * %rdx.
	 */
	b(&e, 2, 0x41, 0x5b);                                           /* pop %r11 */
	push_tp(&e);
	b(&e, 2, 0x49, 0x39);                                           /* cmp %rax, tp(slot); jne */
	slot_field(&e, counts, 0, offsetof(struct stub_count, tp));
	uint8_t *other = jump(&e, JNE);
	b(&e, 2, 0x49, 0xc7);                                           /* movq $0, inside(slot) */
	slot_field(&e, counts, 0, offsetof(struct stub_count, inside));
	u32(&e, 0);
	fix(&e, other, here(&e));
	b(&e, 1, 0x58);                                                 /* pop %rax; ret */
	b(&e, 1, 0xc3);
	if (e.p - e.start > 64)
		return -1;
	memcpy(img + STUB_FAST_EXIT, buf, (size_t)(e.p - e.start));
	return 0;
}

/*
 * A realloc's: the handler unless the size is not 0 (a free), the block is not NULL (a
 * malloc) and its filter byte is 0 (not sampled), the thread's slot is
 * its own and it is inside no realloc already; then the countdown less
 * the size, sampled below 0 (the handler); else the function is called
 * with the thread marked inside it (struct stub_count's inside: what it
 * calls, malloc and free, is its business) and returns through
 * STUB_FAST_EXIT, which clears the mark; a leaf (STUB_FN_NESTS unset: it
 * calls nothing traced) is jumped to.
 */
static int realloc_entry(struct emit *e, int i, const struct stub_fn *fn, const struct fast_at *at, uint64_t orig)
{
	uint64_t data = at->base + STUB_DATA_OFF, counts = data + offsetof(struct stub_data, count);
	uint64_t c = fast_entry_at(at->base, i + 1) - 16, span[2] = { 0, UINT64_MAX };
	uint8_t r = arg_reg[fn->size_a], *slow[5], *slow_pop[2], *pre_pop, *call;
	int n_slow = 0;

	b(e, 3, 0x48 | (r >= 8 ? 5 : 0), 0x85, 0xc0 | (r & 7) << 3 | (r & 7));  /* test %size, %size; je slow */
	slow[n_slow++] = jump(e, JE);
	/* The block's filter byte set: maybe sampled, the handler; NULL: a malloc, nothing to look up. */
	uint8_t *null = filter_byte(e, arg_reg[fn->old_arg], at);
	slow[n_slow++] = jump(e, JNE);
	fix(e, null, here(e));
	slow_pop[0] = count_slot(e, at->base, counts);
	cmp_inside(e, counts);
	slow_pop[1] = jump(e, JNE);
	sub_left(e, counts, r);
	pre_pop = jump(e, JL);
	if (!(fn->flags & STUB_FN_NESTS)) {
		b(e, 1, 0x58);                                          /* pop %rax: a leaf, straight on */
		if (to_original(e, at, orig))
			return -1;
		call = NULL;
		goto tail;
	}
	/* Its object's code first (a signal handler's call may come between), then the mark. */
	if (fn->s.text_hi)
		span[0] = fn->s.text_lo + at->bias, span[1] = fn->s.text_hi - fn->s.text_lo;
	memcpy(e->start + (c - e->at), span, sizeof(span));
	for (int k = 0; k < 2; k++) {
		b(e, 3, 0x48, 0x8b, 0x05);                              /* mov span[k](%rip), %rax; mov %rax, code_lo/len(slot) */
		rip(e, c + 8 * k, 0);
		b(e, 2, 0x49, 0x89);
		slot_field(e, counts, 0, k ? offsetof(struct stub_count, code_len) : offsetof(struct stub_count, code_lo));
	}
	b(e, 5, 0x48, 0x8d, 0x44, 0x24, 0xf8);                          /* lea -8(%rsp), %rax: the function's entry sp */
	b(e, 2, 0x49, 0x89);                                            /* mov %rax, inside(slot) */
	slot_field(e, counts, 0, offsetof(struct stub_count, inside));
	b(e, 1, 0x58);                                                  /* pop %rax */
	b(e, 2, 0x41, 0x53);                                            /* push %r11: the slot, and the entry's alignment */
	b(e, 1, 0xe8);                                                  /* call the original; jmp exit */
	call = e->p;
	u32(e, 0);
	fix(e, jump(e, 0), at->base + STUB_FAST_EXIT);
	fix(e, call, here(e));
	if (to_original(e, at, orig))
		return -1;
tail:
	fix(e, pre_pop, here(e));
	b(e, 1, 0x58);                                                  /* pop %rax */
	to_handler(e, (uint32_t)i | STUB_INDEX_PRESAMPLED, at->handler);
	for (int k = 0; k < 2; k++)
		fix(e, slow_pop[k], here(e));
	b(e, 1, 0x58);                                                  /* pop %rax */
	for (int k = 0; k < n_slow; k++)
		fix(e, slow[k], here(e));
	to_handler(e, (uint32_t)i, at->handler);
	return here(e) <= c ? 0 : -1;
}

int fast_emit(uint8_t *img, int i, const struct stub_fn *fn, const struct probe *p, const struct fast_at *at)
{
	uint64_t base = at->base, handler = at->handler;
	/* Made aside: an entry that does not fit must not spill into its neighbour's. */
	uint8_t buf[STUB_FAST_SIZE + 256];
	struct emit e = { .p = buf, .start = buf, .at = fast_entry_at(base, i) };
	uint64_t data = base + STUB_DATA_OFF, orig = base + STUB_CFG_OFF + offsetof(struct stub_cfg, fns[i].orig);
	uint8_t *slow[4], *slow_pop[2] = { NULL, NULL }, *pre = NULL, *to_orig[3], *inside = NULL;
	int n_slow = 0, n_orig = 0;

	memset(buf, 0, sizeof(buf));
	memcpy(e.p, p->stub_undo, p->stub_undo_len);
	e.p += p->stub_undo_len;
	if ((fn->flags & STUB_FN_FORWARD) || (!(fn->flags & STUB_FN_FREE) && fn->old_arg)) {
		if ((fn->flags & STUB_FN_FORWARD) ? forward(&e, i, p, at, orig) : realloc_entry(&e, i, fn, at, orig))
			return -1;
		memcpy(img + (e.at - base), buf, STUB_FAST_SIZE);
		return 0;
	}
	if (fn->flags & STUB_FN_FREE) {
		uint8_t r = arg_reg[fn->ptr_arg];
		/*
		 * free(NULL): nothing; else the filter's byte of the block's hash
		 * (filter_of() in stub/decide.c).  Whether the stub is on is the
		 * handler's to tell: a byte is set only while it is, and emptied
		 * when it goes off.
		 */
		to_orig[n_orig++] = filter_byte(&e, r, at);
		to_orig[n_orig++] = jump(&e, JE);
		slow[n_slow++] = jump(&e, 0);
	} else {
		uint8_t r = arg_reg[fn->size_a], rb = arg_reg[fn->size_b], size = r;
		if (fn->size_b) {
			/* mov %a, %r11; imul %b, %r11: the size as the handler's fn_size() has it (modulo 2^64). */
			mov_to_r11(&e, r);
			b(&e, 4, 0x4c | (rb >= 8 ? 1 : 0), 0x0f, 0xaf, 0xc0 | (R11 & 7) << 3 | (rb & 7));
			size = R11;
		}
		if ((fn->flags & STUB_FN_NESTS) && size == R11) {
			/* cmp $small_max, %r11; ja slow: sizes 1..small_max call nothing traced. */
			b(&e, 3, 0x49, 0x81, 0xfb);
			u32(&e, fn->small_max);
			slow[n_slow++] = jump(&e, JA);
		} else if (fn->flags & STUB_FN_NESTS) {
			/* lea -1(%reg), %r11; cmp $(small_max - 1), %r11; jae slow: sizes 1..small_max call nothing traced. */
			b(&e, 4, 0x4c | (r >= 8 ? 1 : 0), 0x8d, 0x40 | (R11 & 7) << 3 | (r & 7), 0xff);
			b(&e, 3, 0x49, 0x81, 0xfb);
			u32(&e, fn->small_max - 1);
			slow[n_slow++] = jump(&e, JAE);
		}
		if (!(fn->flags & STUB_FN_NESTS) || size == R11) {
			/* test %size, %size; je original: a 0-byte allocation is never sampled (sampled() in stub/decide.c). */
			b(&e, 3, 0x48 | (size >= 8 ? 5 : 0), 0x85, 0xc0 | (size & 7) << 3 | (size & 7));
			to_orig[n_orig++] = jump(&e, JE);
		}
		if (fn->flags & STUB_FN_GIL) {
			/*
			 * sub %size, gil_left(%rip); jl sampled: the one countdown of
			 * the lock's holder.  No mark of a realloc is looked for: a
			 * call inside one takes its bytes off the countdown, and the
			 * handler, whose nested() tells it, draws again the countdown
			 * it takes below 0 (the realloc's own decision stands).
			 */
			b(&e, 3, 0x48 | (size >= 8 ? 4 : 0), 0x29, 0x05 | (size & 7) << 3);
			rip(&e, data + offsetof(struct stub_data, gil_left), 0);
			pre = jump(&e, JL);
		} else {
			uint64_t counts = data + offsetof(struct stub_data, count);
			slow_pop[0] = count_slot(&e, base, counts);
			cmp_inside(&e, counts);
			inside = jump(&e, JNE);
			if (fn->size_b) {
				/* mov %a, %rax; imul %b, %rax: the size again, %r11 now being the slot. */
				b(&e, 3, 0x48 | (r >= 8 ? 4 : 0), 0x89, 0xc0 | (r & 7) << 3);
				b(&e, 4, 0x48 | (rb >= 8 ? 1 : 0), 0x0f, 0xaf, 0xc0 | (rb & 7));
				size = 0;       /* %rax */
			}
			/*
			 * sub %size, left(slot); pop %rax; jl sampled: the thread's
			 * countdown less the size; below 0 (it was less than the size),
			 * this call is sampled and the handler draws the next.  pop keeps
			 * the flags.
			 */
			sub_left(&e, counts, size);
			b(&e, 1, 0x58);
			pre = jump(&e, JL);
		}
	}
	uint64_t orig_at = here(&e);
	if (to_original(&e, at, orig))
		return -1;
	uint64_t slow_pop_at = here(&e);
	if (slow_pop[0])
		b(&e, 1, 0x58);                                         /* pop %rax */
	uint64_t slow_at = here(&e);
	to_handler(&e, (uint32_t)i, handler);
	uint64_t pre_at = here(&e);
	if (pre)
		to_handler(&e, (uint32_t)i | STUB_INDEX_PRESAMPLED, handler);
	if (inside) {
		fix(&e, inside, here(&e));
		inside_check(&e, data + offsetof(struct stub_data, count), &slow_pop[1], &to_orig[n_orig++],
			     &slow[n_slow++]);
	}
	if (e.p - e.start > STUB_FAST_SIZE)
		return -1;
	for (int k = 0; k < n_slow; k++)
		fix(&e, slow[k], slow_at);
	for (int k = 0; k < n_orig; k++)
		fix(&e, to_orig[k], orig_at);
	for (int k = 0; k < 2; k++)
		if (slow_pop[k])
			fix(&e, slow_pop[k], slow_pop_at);
	if (pre)
		fix(&e, pre, pre_at);
	memcpy(img + (e.at - base), buf, STUB_FAST_SIZE);
	return 0;
}
