/*
 * Moving a function's first instructions elsewhere, so that its first five
 * bytes can become a jump: the displaced instructions run from the stub's
 * orig_i, rewritten where their meaning depends on where they are
 * (rip-relative operands, relative branches), followed by a jump back.
 */
#ifndef HT_RELOCATE_H
#define HT_RELOCATE_H

#include <stddef.h>
#include <stdint.h>

#define JMP_REL32_LEN 5
#define RELOCATED_MAX 48        /* the longest orig_i: displaced code, widened branches, the jump back */

/*
 * code: the function's first bytes as they are at `from` (at least 15 +
 * JMP_REL32_LEN of them, or up to func_size).  Writes orig_i for address
 * `to` into out (RELOCATED_MAX bytes) and its length into *out_len.
 * skip: the jump goes that many bytes in (relocate_skip); the displaced
 * instructions cover [0, skip + 5) and still start with the first.
 * Returns the number of bytes displaced (>= skip + 5), or -1 with a reason.
 */
int relocate_prologue(const uint8_t *code, size_t avail, uint64_t func_size, uint64_t from, uint64_t to,
		      size_t skip, uint8_t *out, size_t *out_len, char *why, size_t why_len);

#define UNDO_MAX 4

/*
 * Where a function's jump goes and how much it displaces (code, avail,
 * func_size and from as for relocate_prologue): *skip bytes in, past a
 * first instruction that a pre-stub undoes (its undo in undo, up to
 * UNDO_MAX bytes, *undo_len of them) or that changes nothing a call needs,
 * so that a breakpoint another tool puts at the entry (bpftrace, perf
 * probe) runs it out of line and resumes on the jump, not inside it; else
 * (no such instruction, or the function too short for the jump after it)
 * at the entry, *skip and *undo_len 0.  Returns the number of bytes
 * displaced, or -1 with a reason.
 */
int relocate_choose(const uint8_t *code, size_t avail, uint64_t func_size, uint64_t from, size_t *skip,
		    uint8_t *undo, size_t *undo_len, char *why, size_t why_len);

#endif
