/*
 * --unwind dwarf: an ELF object's call frame information (.eh_frame, or
 * .debug_frame when there is none) compiled into the rows the BPF unwinder
 * binary-searches (struct ht_unwind_row in heaptrace.h).  Compiling a
 * library's CFI takes tens of milliseconds and every traced process maps
 * the same few libraries, so tables are kept in an on-disk cache keyed by
 * the object's build ID.
 */
#ifndef HT_UNWIND_TABLE_H
#define HT_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heaptrace.h"

struct unwind_table {
	/*
	 * Sorted by strictly increasing pc.  A row holds up to the next
	 * row's pc.  Where a function's CFI ends and the next function's
	 * does not start, an HT_CFA_UNKNOWN row follows (the last row is
	 * one), so that code without CFI never borrows a neighbour's rule.
	 * Consecutive rows never hold the same rule.  HT_CFA_UNKNOWN and
	 * HT_CFA_END rows carry no offsets (0, rbp HT_RBP_UNKNOWN) so that
	 * equal rules compare equal; HT_CFA_PLT rows carry cfa_off 8, the
	 * expression's base.
	 */
	struct ht_unwind_row *rows;
	size_t n;
	bool from_cache;
};

/*
 * Build (or load from the cache) the rows for the ELF file at path.  0 or
 * -errno (-ENOEXEC: not an x86-64 ELF object).  A file with no CFI gives
 * n == 0 and returns 0.  The cache is $XDG_CACHE_HOME/heaptrace, else
 * ~/.cache/heaptrace; when it cannot be used the table is built anyway.
 */
int unwind_table_get(const char *path, struct unwind_table *out);

/* The same, never reading or writing the cache: for measuring and testing. */
int unwind_table_build(const char *path, struct unwind_table *out);

void unwind_table_free(struct unwind_table *t);

/* The row that holds pc (an ELF virtual address), as the BPF search finds it; NULL before the first row. */
const struct ht_unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t pc);

#endif
