/*
 * The fast entries (fast.h), as x86-64 machine code.  Only %r11 (scratch
 * at a call in the System V ABI, as entry_i uses it) and the flags are
 * changed, and %rax for a free's filter lookup, pushed and popped around
 * it: every argument register reaches the original as it came.
 */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "inject/fast.h"
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
	return (fn->flags & STUB_FN_SIZE_FAST) && fn->size_a >= 1 && fn->size_a <= 6 && !fn->size_b &&
	       fn->size_k == 1 && !(fn->flags & (STUB_FN_SIZE_AT_RET | STUB_FN_PAGE_ROUND | STUB_FN_RESET)) &&
	       !fn->old_arg && (!(fn->flags & STUB_FN_NESTS) || fn->small_max);
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

/*
 * A wrapper's: on to the original while its slot holds a value it may
 * forward on (the function behind it, heaptrace's jump to it), else the
 * handler.  Three words after the code: the slot's address, the two values.
 */
static int forward(struct emit *e, uint8_t *img, int i, const struct probe *p, const struct fast_at *at, uint64_t orig)
{
	uint64_t want[2] = { p->fwd_func ? p->fwd_func + at->bias : 0, at->jump }, c = at->base + STUB_FAST_OFF +
		 (uint64_t)(i + 1) * STUB_FAST_SIZE - 24, slot = p->fwd_slot + at->bias;
	uint8_t *consts = img + STUB_FAST_OFF + (i + 1) * STUB_FAST_SIZE - 24, *fwd[2];
	int n = 0;

	if (!p->fwd_slot || (!want[0] && !want[1]))
		return -1;
	memcpy(consts, &slot, 8);
	memcpy(consts + 8, want, 16);
	b(e, 3, 0x4c, 0x8b, 0x1d);                                      /* mov slot's address(%rip), %r11 */
	rip(e, c, 0);
	b(e, 3, 0x4d, 0x8b, 0x1b);                                      /* mov (%r11), %r11 */
	for (int k = 0; k < 2; k++)
		if (want[k]) {
			b(e, 3, 0x4c, 0x3b, 0x1d);                      /* cmp value(%rip), %r11; je forward */
			rip(e, c + 8 + 8 * k, 0);
			fwd[n++] = jump(e, JE);
		}
	b(e, 2, 0x41, 0xbb);                                            /* mov $i, %r11d; jmp handler */
	u32(e, (uint32_t)i);
	fix(e, jump(e, 0), at->handler);
	for (int k = 0; k < n; k++)
		fix(e, fwd[k], here(e));
	b(e, 2, 0xff, 0x25);                                            /* jmp *fns[i].orig(%rip) */
	rip(e, orig, 0);
	return e->p - e->start <= STUB_FAST_SIZE - 24 ? 0 : -1;
}

int fast_emit(uint8_t *img, int i, const struct stub_fn *fn, const struct probe *p, const struct fast_at *at)
{
	uint64_t base = at->base, handler = at->handler;
	struct emit e = { .p = img + STUB_FAST_OFF + i * STUB_FAST_SIZE, .at = base + STUB_FAST_OFF + i * STUB_FAST_SIZE };
	uint64_t data = base + STUB_DATA_OFF, orig = base + STUB_CFG_OFF + offsetof(struct stub_cfg, fns[i].orig);
	uint8_t *slow[4], *pre = NULL, *to_orig[2];
	int n_slow = 0, n_orig = 0;

	e.start = e.p;
	memcpy(e.p, p->stub_undo, p->stub_undo_len);
	e.p += p->stub_undo_len;
	if (fn->flags & STUB_FN_FORWARD)
		return forward(&e, img, i, p, at, orig);
	/* cmpl $0, enabled(%rip); je slow: the handler passes a call through while the stub is off. */
	b(&e, 2, 0x83, 0x3d);
	rip(&e, data + offsetof(struct stub_data, enabled), 1);
	b(&e, 1, 0);
	slow[n_slow++] = jump(&e, JE);
	if (fn->flags & STUB_FN_FREE) {
		uint8_t r = arg_reg[fn->ptr_arg];
		/* free(NULL): nothing; else the filter's byte of the block's hash (filter_of() in stub/decide.c). */
		mov_to_r11(&e, r);
		b(&e, 3, 0x4d, 0x85, 0xdb);                             /* test %r11, %r11 */
		to_orig[n_orig++] = jump(&e, JE);
		b(&e, 4, 0x49, 0xc1, 0xeb, 4);                          /* shr $4, %r11 */
		b(&e, 4, 0x4c, 0x0f, 0xaf, 0x1d);                       /* imul K(%rip), %r11 */
		rip(&e, base + STUB_FAST_HASH_K, 0);
		b(&e, 4, 0x49, 0xc1, 0xeb, 64 - STUB_FILTER_BITS);      /* shr $(64 - bits), %r11 */
		b(&e, 1, 0x50);                                         /* push %rax */
		b(&e, 3, 0x48, 0x8d, 0x05);                             /* lea filter(%rip), %rax */
		rip(&e, data + offsetof(struct stub_data, filter), 0);
		b(&e, 5, 0x42, 0x80, 0x3c, 0x18, 0);                    /* cmpb $0, (%rax,%r11) */
		b(&e, 1, 0x58);                                         /* pop %rax */
		to_orig[n_orig++] = jump(&e, JE);
		slow[n_slow++] = jump(&e, 0);
	} else {
		uint8_t r = arg_reg[fn->size_a];
		/* cmpl $0, active(%rip); jne slow: a thread inside a traced call, this may be nested in it. */
		b(&e, 2, 0x83, 0x3d);
		rip(&e, data + offsetof(struct stub_data, active), 1);
		b(&e, 1, 0);
		slow[n_slow++] = jump(&e, JNE);
		if (fn->flags & STUB_FN_NESTS) {
			/* lea -1(%reg), %r11; cmp $(small_max - 1), %r11; jae slow: sizes 1..small_max call nothing traced. */
			b(&e, 4, 0x4c | (r >= 8 ? 1 : 0), 0x8d, 0x40 | (R11 & 7) << 3 | (r & 7), 0xff);
			b(&e, 3, 0x49, 0x81, 0xfb);
			u32(&e, fn->small_max - 1);
			slow[n_slow++] = jump(&e, JAE);
		}
		/* test %reg, %reg; je original: a 0-byte allocation is never sampled (sampled() in stub/decide.c). */
		b(&e, 3, 0x48 | (r >= 8 ? 5 : 0), 0x85, 0xc0 | (r & 7) << 3 | (r & 7));
		to_orig[n_orig++] = jump(&e, JE);
		/* The countdown less the size, at once for every thread: old = xadd(countdown, -size). */
		mov_to_r11(&e, r);
		b(&e, 3, 0x49, 0xf7, 0xdb);                             /* neg %r11 */
		b(&e, 5, 0xf0, 0x4c, 0x0f, 0xc1, 0x1d);                 /* lock xadd %r11, countdown(%rip) */
		rip(&e, data + offsetof(struct stub_data, countdown), 0);
		/* old < size: it went below 0 with this call, which is sampled (the handler draws the next countdown). */
		b(&e, 3, 0x48 | (r >= 8 ? 4 : 0) | 1, 0x39, 0xc0 | (r & 7) << 3 | (R11 & 7));   /* cmp %reg, %r11 */
		pre = jump(&e, JL);
	}
	uint64_t orig_at = here(&e);
	b(&e, 2, 0xff, 0x25);                                           /* jmp *fns[i].orig(%rip) */
	rip(&e, orig, 0);
	uint64_t pre_at = here(&e);
	if (pre) {
		b(&e, 2, 0x41, 0xbb);                                   /* mov $(i | PRESAMPLED), %r11d */
		u32(&e, (uint32_t)i | STUB_INDEX_PRESAMPLED);
		fix(&e, jump(&e, 0), handler);
	}
	uint64_t slow_at = here(&e);
	b(&e, 2, 0x41, 0xbb);                                           /* mov $i, %r11d; jmp handler */
	u32(&e, (uint32_t)i);
	fix(&e, jump(&e, 0), handler);
	if (e.p - e.start > STUB_FAST_SIZE)
		return -1;
	for (int k = 0; k < n_slow; k++)
		fix(&e, slow[k], slow_at);
	for (int k = 0; k < n_orig; k++)
		fix(&e, to_orig[k], orig_at);
	if (pre)
		fix(&e, pre, pre_at);
	return 0;
}
