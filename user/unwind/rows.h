/*
 * An object's CFI rows, a header of their own: table.c compiles them and
 * cache.c stores and loads them, without including each other's header.
 */
#ifndef HT_UNWIND_ROWS_H
#define HT_UNWIND_ROWS_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
