#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <capstone/capstone.h>

#include "util/kernel.h"
#include "probe/placement.h"
#include "util/array.h"

#define WINDOW 64               /* bytes of a function's start that are examined */

struct placer {
	struct elfobj *o;
	csh cs;
	uint64_t *targets;      /* direct-branch targets of the whole object, sorted once queries are many */
	size_t n_targets;
	bool scanned;
	bool sorted;
	unsigned queries;       /* placer_branch_into's, while not sorted */
	bool nops;              /* the kernel emulates every nop and optimizes 5-byte ones */
};

const char *probe_cost_name(enum probe_cost c)
{
	return c == PROBE_OPTIMIZED ? "optimized ~0.45 us" : c == PROBE_EMULATED ? "emulated ~0.65 us" :
										   "single-stepped ~13 us";
}

/*
 * Kernel 6.18 emulates nopl (0f 1f /0) as it did the one-byte nop, and
 * rewrites a uprobe on the 5-byte nop into a call to a trampoline after its
 * first hit (arch_uprobe_optimize).  Known by the version: a probe for it
 * would have to trap.
 */
static bool kernel_nops(void)
{
	return kernel_at_least(6, 18);
}

struct placer *placer_new(struct elfobj *o)
{
	struct placer *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return NULL;
	pl->o = o;
	pl->nops = kernel_nops();
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &pl->cs) != CS_ERR_OK) {
		free(pl);
		return NULL;
	}
	return pl;
}

void placer_free(struct placer *pl)
{
	if (!pl)
		return;
	cs_close(&pl->cs);
	free(pl->targets);
	free(pl);
}

/* The forms every kernel with uprobes emulates. */
static const char *emulated(const uint8_t *b, size_t len)
{
	if ((len == 1 && b[0] >= 0x50 && b[0] <= 0x57) ||
	    (len == 2 && b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57))
		return "push of a register";
	if ((len == 1 && b[0] == 0x90) || (len == 2 && b[0] == 0x66 && b[1] == 0x90))
		return "nop";
	if ((len == 2 && b[0] == 0xeb) || (len == 5 && b[0] == 0xe9))
		return "relative jmp";
	if (len == 5 && b[0] == 0xe8)
		return "relative call";
	if ((len == 2 && b[0] >= 0x70 && b[0] <= 0x7f) ||
	    (len == 6 && b[0] == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f))
		return "conditional jump";
	return NULL;
}

/*
 * The forms arch/x86/kernel/uprobes.c emulates instead of single-stepping,
 * with what it costs: NULL when the kernel single-steps it.  Nops: 0x90
 * under operand-size prefixes only (with REX.B it is xchg r8, rax; with
 * rep, pause), nopl 0f 1f /0 likewise; only 0f 1f 44 00 00 is optimized,
 * and not across a page, where the kernel cannot write it atomically.
 */
static const char *probe_kind(const struct placer *pl, const uint8_t *b, size_t len, uint64_t vaddr,
			      enum probe_cost *cost)
{
	size_t p = 0;

	*cost = PROBE_EMULATED;
	if (pl->nops) {
		if (len == 5 && !memcmp(b, "\x0f\x1f\x44\x00\x00", 5) && (vaddr & 4095) <= 4096 - 5) {
			*cost = PROBE_OPTIMIZED;
			return "5-byte nop";
		}
		while (p < len && b[p] == 0x66)
			p++;
		if (len - p >= 3 && b[p] == 0x0f && b[p + 1] == 0x1f && !((b[p + 2] >> 3) & 7))
			return "nop";
	}
	const char *kind = emulated(b, len);
	if (!kind)
		*cost = PROBE_SINGLESTEP;
	return kind;
}

/* The 64-bit register a (sub)register belongs to, for the ones that matter here. */
static x86_reg full_reg(x86_reg r)
{
	switch (r) {
	case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL: return X86_REG_RDI;
	case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL: return X86_REG_RSI;
	case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DL: case X86_REG_DH:
		return X86_REG_RDX;
	case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CL: case X86_REG_CH:
		return X86_REG_RCX;
	case X86_REG_R8: case X86_REG_R8D: case X86_REG_R8W: case X86_REG_R8B: return X86_REG_R8;
	case X86_REG_R9: case X86_REG_R9D: case X86_REG_R9W: case X86_REG_R9B: return X86_REG_R9;
	case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL: return X86_REG_RSP;
	default: return r;
	}
}

static const x86_reg arg_regs[7] = { X86_REG_INVALID, X86_REG_RDI, X86_REG_RSI, X86_REG_RDX,
				     X86_REG_RCX, X86_REG_R8, X86_REG_R9 };

/*
 * Register and ALU instructions that cannot fault, branch or touch memory
 * other than by a PC-relative load (checked separately).
 */
static bool whitelisted(const char *m)
{
	static const char *const ok[] = { "mov", "movzx", "movsx", "movsxd", "movabs", "lea", "add",
					  "sub", "and", "or", "xor", "test", "cmp", "shl", "shr", "sar",
					  "rol", "ror", "imul", "mul", "neg", "not", "inc", "dec", "bt",
					  "endbr64", "nop", "xchg" };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(m, ok[i]))
			return true;
	return !strncmp(m, "cmov", 4) || !strncmp(m, "set", 3);
}

/* NULL when insn may be skipped over; otherwise why not. */
static const char *unsafe(struct placer *pl, const cs_insn *insn, unsigned args_read)
{
	const cs_x86 *x = &insn->detail->x86;
	cs_regs rd, wr;
	uint8_t nrd, nwr;

	if (!whitelisted(insn->mnemonic))
		return "may branch, fault or touch memory";
	if (x->prefix[0])
		return "has a lock or rep prefix";
	if (cs_regs_access(pl->cs, insn, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return "writes registers capstone cannot name";
	for (int i = 0; i < nwr; i++) {
		x86_reg r = full_reg(wr[i]);
		if (r == X86_REG_RSP)
			return "moves the stack pointer";
		for (int a = 1; a <= 6; a++)
			if ((args_read & (1u << a)) && r == arg_regs[a])
				return "overwrites an argument register the probe reads";
	}
	bool no_access = !strcmp(insn->mnemonic, "lea") || !strcmp(insn->mnemonic, "nop");
	for (int i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];
		if (op->type != X86_OP_MEM || no_access)
			continue;
		if (op->access & CS_AC_WRITE)
			return "writes memory";
		if (op->mem.base != X86_REG_RIP || op->mem.index != X86_REG_INVALID ||
		    op->mem.segment != X86_REG_INVALID)
			return "reads memory that may fault";
		if (!elfobj_readable(pl->o, insn->address + insn->size + op->mem.disp, op->size))
			return "reads outside the object's loaded segments";
	}
	return NULL;
}

static int32_t rel32_at(const uint8_t *b)
{
	return (int32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
}

/*
 * Every byte position that could start a rel32 jmp, call or jcc, whether or
 * not an instruction starts there: a superset of the real branch targets, so
 * nothing is missed, at memchr speed.  Spurious targets only make placement
 * more cautious (about one in 10^5 windows).
 */
static int scan_rel32(const uint8_t *code, size_t len, uint64_t vaddr, void *arg)
{
	struct placer *pl = arg;
	size_t cap = pl->n_targets;

	for (size_t i = 0; i + 6 <= len; i++) {
		uint64_t t;
		if (code[i] == 0xe8 || code[i] == 0xe9)
			t = vaddr + i + 5 + rel32_at(code + i + 1);
		else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80)
			t = vaddr + i + 6 + rel32_at(code + i + 2);
		else
			continue;
		if (ARRAY_RESERVE(pl->targets, cap, pl->n_targets + 1, 65536))
			return -1;
		pl->targets[pl->n_targets++] = t;
	}
	return 0;
}

/* A rel8 branch reaches 128 bytes back and 127 forward of its end. */
#define REL8_REACH 130

/*
 * Short branches into (lo, hi] can only come from near it: decode that
 * neighbourhood exactly, from a function start (an instruction boundary).
 * Without one, any byte that could be a short branch there counts.
 */
static int rel8_into(struct placer *pl, uint64_t lo, uint64_t hi, bool *hit)
{
	uint64_t from;
	uint8_t buf[4096];

	if (!elfobj_func_start_before(pl->o, lo - REL8_REACH, &from) ||
	    lo - from + REL8_REACH > sizeof(buf) || elfobj_read(pl->o, from, buf, lo - from + REL8_REACH)) {
		/* No boundary to start from: be conservative over the raw bytes. */
		uint64_t start = lo > REL8_REACH ? lo - REL8_REACH : 0;
		size_t len = hi + REL8_REACH - start;
		if (len > sizeof(buf) || elfobj_read(pl->o, start, buf, len))
			return -1;
		for (size_t i = 0; i + 2 <= len; i++)
			if (buf[i] == 0xeb || (buf[i] & 0xf0) == 0x70 || (buf[i] >= 0xe0 && buf[i] <= 0xe3)) {
				uint64_t t = start + i + 2 + (int8_t)buf[i + 1];
				*hit |= t > lo && t <= hi;
			}
		return 0;
	}
	size_t len = lo - from + REL8_REACH;
	const uint8_t *p = buf;
	uint64_t addr = from;
	cs_insn *insn = cs_malloc(pl->cs);

	if (!insn)
		return -1;
	cs_option(pl->cs, CS_OPT_DETAIL, CS_OPT_OFF);
	while (len) {
		if (!cs_disasm_iter(pl->cs, &p, &len, &addr, insn)) {
			p++, len--, addr++;
			continue;
		}
		const uint8_t *b = insn->bytes;
		if (insn->size == 2 && (b[0] == 0xeb || (b[0] & 0xf0) == 0x70 || (b[0] >= 0xe0 && b[0] <= 0xe3))) {
			uint64_t t = insn->address + 2 + (int8_t)b[1];
			*hit |= t > lo && t <= hi;
		}
	}
	cs_free(insn, 1);
	cs_option(pl->cs, CS_OPT_DETAIL, CS_OPT_ON);
	return 0;
}

/* Does any direct branch of the object land in (lo, hi]? */
int placer_branch_into(struct placer *pl, uint64_t lo, uint64_t hi, bool *hit)
{
	*hit = false;
	if (!pl->scanned) {
		if (elfobj_exec_segments(pl->o, scan_rel32, pl))
			return -1;
		pl->scanned = true;
	}
	/*
	 * A plan's few queries are cheaper as passes over the targets than as
	 * one sort of them (libc has 48,500: its qsort was 6-10 ms of every
	 * start-up); many queries (many --sym functions) sort them once.
	 */
	if (!pl->sorted && ++pl->queries > 64) {
		qsort(pl->targets, pl->n_targets, sizeof(*pl->targets), array_cmp_u64);
		pl->sorted = true;
	}
	if (!pl->sorted) {
		bool in = false;
		for (size_t i = 0; i < pl->n_targets; i++)
			in |= pl->targets[i] > lo && pl->targets[i] <= hi;
		*hit = in;
		return *hit ? 0 : rel8_into(pl, lo, hi, hit);
	}
	size_t a = 0, b = pl->n_targets;
	while (a < b) {
		size_t m = (a + b) / 2;
		if (pl->targets[m] <= lo)
			a = m + 1;
		else
			b = m;
	}
	*hit = a < pl->n_targets && pl->targets[a] <= hi;
	return *hit ? 0 : rel8_into(pl, lo, hi, hit);
}

static void text_of(const cs_insn *insn, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", insn->mnemonic, insn->op_str[0] ? " " : "", insn->op_str);
}

int placer_choose(struct placer *pl, uint64_t vaddr, uint64_t size, unsigned args_read,
		  bool at_entry, struct placement *out)
{
	uint8_t code[WINDOW];
	size_t len = size && size < WINDOW ? size : WINDOW;
	const uint8_t *p = code;
	uint64_t addr = vaddr;
	char first[200] = "", stop[480] = "";
	const char *kind, *best_kind;
	enum probe_cost cost;
	int skipped = 0;

	memset(out, 0, sizeof(*out));
	out->vaddr = vaddr;
	out->cost = PROBE_SINGLESTEP;
	while (len && elfobj_read(pl->o, vaddr, code, len))
		len /= 2;       /* a function near the end of its segment */
	if (!len)
		return -1;

	cs_option(pl->cs, CS_OPT_DETAIL, CS_OPT_ON);
	cs_insn *insn = cs_malloc(pl->cs);
	if (!insn)
		return -1;
	if (!cs_disasm_iter(pl->cs, &p, &len, &addr, insn)) {
		snprintf(out->why, sizeof(out->why), "entry: cannot decode the first instruction");
		goto done;
	}
	text_of(insn, first, sizeof(first));
	snprintf(out->insn, sizeof(out->insn), "%s", first);
	best_kind = probe_kind(pl, insn->bytes, insn->size, insn->address, &out->cost);
	if (at_entry) {
		snprintf(out->why, sizeof(out->why), "entry (--probe-at=entry)");
		goto done;
	}
	/*
	 * Each instruction is a candidate once all before it may be skipped;
	 * a cheaper one than the best so far becomes the site.  The walk ends
	 * at the first that may not be skipped, or at the cheapest class.
	 */
	for (;;) {
		const char *bad;

		if (out->cost == PROBE_OPTIMIZED)
			break;
		if ((bad = unsafe(pl, insn, args_read))) {
			char t[200];
			text_of(insn, t, sizeof(t));
			snprintf(stop, sizeof(stop), "cannot skip `%s` at +%lu: it %s", t, insn->address - vaddr, bad);
			break;
		}
		skipped++;
		if (!cs_disasm_iter(pl->cs, &p, &len, &addr, insn)) {
			snprintf(stop, sizeof(stop), "no cheaper instruction in the first %d bytes", WINDOW);
			break;
		}
		kind = probe_kind(pl, insn->bytes, insn->size, insn->address, &cost);
		if (!kind || cost >= out->cost)
			continue;
		bool hit;
		if (size == 0 || placer_branch_into(pl, vaddr, insn->address, &hit) || hit) {
			snprintf(stop, sizeof(stop), "%s", size == 0 ? "function size unknown" :
				 "a branch lands inside the prologue");
			break;
		}
		out->vaddr = insn->address;
		out->cost = cost;
		best_kind = kind;
		text_of(insn, out->insn, sizeof(out->insn));
		snprintf(out->why, sizeof(out->why), "skips %d instruction%s from `%s`; a %s", skipped,
			 skipped > 1 ? "s" : "", first, kind);
	}
	if (out->vaddr != vaddr)
		goto done;
	if (best_kind)
		snprintf(out->why, sizeof(out->why), "entry: a %s", best_kind);
	else
		snprintf(out->why, sizeof(out->why), "entry: %.*s", (int)sizeof(out->why) - 8, stop);
done:
	cs_free(insn, 1);
	return 0;
}

bool placer_is_leaf(struct placer *pl, uint64_t vaddr, uint64_t size)
{
	/* Allocators worth skipping a return for are small; a bound keeps planning quick. */
	enum { MAX_LEAF = 4096 };
	uint8_t code[MAX_LEAF];
	const uint8_t *p = code;
	size_t len = size;
	uint64_t addr = vaddr;
	bool leaf = true;

	if (!size || size > MAX_LEAF || elfobj_read(pl->o, vaddr, code, size))
		return false;
	cs_option(pl->cs, CS_OPT_DETAIL, CS_OPT_ON);
	cs_insn *insn = cs_malloc(pl->cs);
	if (!insn)
		return false;
	while (leaf && len) {
		if (!cs_disasm_iter(pl->cs, &p, &len, &addr, insn)) {
			leaf = false;
			break;
		}
		const cs_detail *d = insn->detail;
		for (int g = 0; leaf && d && g < d->groups_count; g++) {
			if (d->groups[g] == CS_GRP_CALL || d->groups[g] == CS_GRP_INT) {
				leaf = false;
			} else if (d->groups[g] == CS_GRP_JUMP) {
				/* Only a direct jump within the function: a tail call or a table could go anywhere. */
				const cs_x86_op *op = d->x86.op_count == 1 ? &d->x86.operands[0] : NULL;
				leaf = op && op->type == X86_OP_IMM && (uint64_t)op->imm >= vaddr &&
				       (uint64_t)op->imm < vaddr + size;
			}
		}
	}
	cs_free(insn, 1);
	return leaf;
}
