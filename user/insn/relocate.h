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
 * Returns the number of bytes displaced (>= 5), or -1 with a reason.
 */
int relocate_prologue(const uint8_t *code, size_t avail, uint64_t func_size, uint64_t from, uint64_t to,
		      uint8_t *out, size_t *out_len, char *why, size_t why_len);

#endif
