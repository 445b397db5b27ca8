#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <capstone/capstone.h>

#include "insn/relocate.h"

static bool fits_rel32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* A relative jmp, jcc or call: its target; false for anything else. */
static bool relative_branch(csh cs, const cs_insn *in, uint64_t *target)
{
	const cs_x86 *x = &in->detail->x86;

	if (!cs_insn_group(cs, in, CS_GRP_JUMP) && !cs_insn_group(cs, in, CS_GRP_CALL))
		return false;
	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	*target = x->operands[0].imm;
	return true;
}

static bool rip_relative(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	for (int i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP)
			return true;
	return false;
}

/* A decoder with operand details, and room for one instruction; false (a reason in why) if none. */
static bool decoder_open(csh *cs, cs_insn **in, char *why, size_t why_len)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, cs) != CS_ERR_OK) {
		snprintf(why, why_len, "cannot start the instruction decoder");
		return false;
	}
	cs_option(*cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (!(*in = cs_malloc(*cs))) {
		snprintf(why, why_len, "out of memory");
		cs_close(cs);
		return false;
	}
	return true;
}

static void decoder_close(csh *cs, cs_insn *in)
{
	cs_free(in, 1);
	cs_close(cs);
}

static int relocate(csh cs, cs_insn *in, const uint8_t *code, size_t avail, uint64_t func_size, uint64_t from,
		    uint64_t to, size_t skip, uint8_t *out, size_t *out_len, char *why, size_t why_len)
{
	size_t done = 0, len = 0;
	const uint8_t *p = code;
	size_t left = avail;
	uint64_t addr = from;

	while (done < skip + JMP_REL32_LEN) {
		if (!left || done >= func_size) {
			snprintf(why, why_len, "the function is shorter than a jump (%lu bytes)", (unsigned long)func_size);
			return -1;
		}
		if (!cs_disasm_iter(cs, &p, &left, &addr, in)) {
			snprintf(why, why_len, "undecodable instruction at +%zu", done);
			return -1;
		}
		uint64_t at = to + len, target;
		const uint8_t *b = in->bytes;

		if (done + in->size > func_size) {
			snprintf(why, why_len, "the function is shorter than a jump (%lu bytes)", (unsigned long)func_size);
			return -1;
		}
		if (len + in->size + 6 + JMP_REL32_LEN > RELOCATED_MAX) {
			snprintf(why, why_len, "the displaced code does not fit");
			return -1;
		}
		if (relative_branch(cs, in, &target)) {
			int64_t rel;
			if (in->id == X86_INS_JMP) {
				out[len] = 0xe9;
				rel = (int64_t)(target - (at + 5));
				put32(out + len + 1, (int32_t)rel);
				len += 5;
			} else if (in->id == X86_INS_CALL) {
				out[len] = 0xe8;
				rel = (int64_t)(target - (at + 5));
				put32(out + len + 1, (int32_t)rel);
				len += 5;
			} else if (in->size == 2 && (b[0] & 0xf0) == 0x70) {
				out[len] = 0x0f;
				out[len + 1] = 0x80 | (b[0] & 0x0f);
				rel = (int64_t)(target - (at + 6));
				put32(out + len + 2, (int32_t)rel);
				len += 6;
			} else if (in->size == 6 && b[0] == 0x0f && (b[1] & 0xf0) == 0x80) {
				out[len] = 0x0f;
				out[len + 1] = b[1];
				rel = (int64_t)(target - (at + 6));
				put32(out + len + 2, (int32_t)rel);
				len += 6;
			} else {
				/* loop, jrcxz and friends have no rel32 form. */
				snprintf(why, why_len, "`%s %s` cannot be moved", in->mnemonic, in->op_str);
				return -1;
			}
			if (!fits_rel32(rel)) {
				snprintf(why, why_len, "a branch target is out of reach of the stub");
				return -1;
			}
		} else {
			memcpy(out + len, b, in->size);
			if (rip_relative(in)) {
				const cs_x86 *x = &in->detail->x86;
				uint8_t off = x->encoding.disp_offset, size = x->encoding.disp_size;
				if (size != 4 || off + 4 > in->size) {
					snprintf(why, why_len, "odd rip-relative operand in `%s %s`", in->mnemonic,
						 in->op_str);
					return -1;
				}
				int32_t disp;
				memcpy(&disp, b + off, 4);
				int64_t moved = (int64_t)(from + done + in->size + disp) - (int64_t)(at + in->size);
				if (!fits_rel32(moved)) {
					snprintf(why, why_len, "a rip-relative operand is out of reach of the stub");
					return -1;
				}
				put32(out + len + off, (int32_t)moved);
			}
			len += in->size;
		}
		done += in->size;
	}
	/* Back to the first instruction that was not displaced. */
	int64_t back = (int64_t)(from + done) - (int64_t)(to + len + JMP_REL32_LEN);
	if (!fits_rel32(back)) {
		snprintf(why, why_len, "the function is out of reach of the stub");
		return -1;
	}
	out[len] = 0xe9;
	put32(out + len + 1, (int32_t)back);
	len += JMP_REL32_LEN;
	*out_len = len;
	return (int)done;
}

int relocate_prologue(const uint8_t *code, size_t avail, uint64_t func_size, uint64_t from, uint64_t to,
		      size_t skip, uint8_t *out, size_t *out_len, char *why, size_t why_len)
{
	csh cs;
	cs_insn *in;

	if (!decoder_open(&cs, &in, why, why_len))
		return -1;
	int len = relocate(cs, in, code, avail, func_size, from, to, skip, out, out_len, why, why_len);
	decoder_close(&cs, in);
	return len;
}

static bool registers_only(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	for (int i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM)
			return false;
	return true;
}

/*
 * The length of a first instruction the jump can go after (relocate_choose)
 * with its undo in undo, *undo_len bytes; or 0: the jump goes at the entry.
 */
static size_t skip_len(csh cs, cs_insn *in, const uint8_t *code, size_t avail, uint8_t *undo, size_t *undo_len)
{
	size_t k = 0;
	const uint8_t *p = code;
	size_t left = avail;
	uint64_t addr = 0;

	*undo_len = 0;
	if (cs_disasm_iter(cs, &p, &left, &addr, in)) {
		const cs_x86 *x = &in->detail->x86;
		const uint8_t *b = in->bytes;

		if (in->id == X86_INS_ENDBR64 || in->id == X86_INS_NOP ||
		    ((in->id == X86_INS_TEST || in->id == X86_INS_CMP) && registers_only(in))) {
			k = in->size;
		} else if (in->size <= 2 && ((b[0] & 0xf8) == 0x50 || (in->size == 2 && b[0] == 0x41 &&
										(b[1] & 0xf8) == 0x50))) {
			/* push %reg (not %rsp, 0x54 alone): pop it, the same register, the same value. */
			if (!(in->size == 1 && b[0] == 0x54)) {
				memcpy(undo, b, in->size);
				undo[in->size - 1] += 8;        /* 0x50+r -> 0x58+r */
				*undo_len = in->size;
				k = in->size;
			}
		} else if (in->size == 4 && b[0] == 0x48 && b[1] == 0x83 && b[2] == 0xec && x->op_count == 2) {
			/* sub $imm8,%rsp: add it back (flags are no argument). */
			undo[0] = 0x48, undo[1] = 0x83, undo[2] = 0xc4, undo[3] = b[3];
			*undo_len = 4;
			k = 4;
		}
	}
	return k;
}

int relocate_choose(const uint8_t *code, size_t avail, uint64_t func_size, uint64_t from, size_t *skip,
		    uint8_t *undo, size_t *undo_len, char *why, size_t why_len)
{
	uint8_t moved[RELOCATED_MAX];
	size_t moved_len;
	csh cs;
	cs_insn *in;
	int len = -1;

	if (!decoder_open(&cs, &in, why, why_len))
		return -1;
	*skip = skip_len(cs, in, code, avail, undo, undo_len);
	/* Past an instruction the pre-stub undoes, if the function is long enough; else at the entry. */
	if (*skip)
		len = relocate(cs, in, code, avail, func_size, from, from, *skip, moved, &moved_len, why, why_len);
	if (len < 0) {
		*skip = *undo_len = 0;
		len = relocate(cs, in, code, avail, func_size, from, from, 0, moved, &moved_len, why, why_len);
	}
	decoder_close(&cs, in);
	return len;
}
