/*
 * The unwind table test's oracle: readelf's own interpretation of an
 * object's CFI (--debug-dump=frames-interp), read into rows that
 * test_unwind_table.c compares with unwind/table.c's, row for row.
 */
#ifndef HT_TEST_READELF_CFI_H
#define HT_TEST_READELF_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/table.h"

/* A readelf row: rule and, for a CFA it prints as "exp", a wildcard (.plt or unknown). */
struct xrow {
	uint64_t pc;
	struct ht_unwind_row r;
	bool exp;
	bool all_exp;           /* CFA and return address both expressions: a signal frame's, in an 'S' CIE */
};

struct xfde {
	uint64_t start, end, cie;
	size_t first, n;        /* rows in the xrow array */
	bool signal;            /* a CIE with the 'S' augmentation (its FDEs are signal frames) */
};

struct xcfi {
	struct xrow *rows;
	size_t nrows, caprows;
	struct xfde *fdes;
	size_t nfdes, capfdes;
};

/* readelf's rows of the object at path, by FDE; false if readelf could not be run or read. */
bool read_readelf(const char *path, struct xcfi *x);

/*
 * One table of x's rows in address order, as unwind/table.c makes its own:
 * each FDE's rows (one made up for an FDE without), and a gap row after
 * each.  out has room for x->nrows + 2 * x->nfdes + 1 rows; returns how
 * many.  Sorts x's FDEs.
 */
size_t x_table(struct xcfi *x, struct xrow *out);

/* The row in force at pc (the last at or below it), or NULL. */
const struct xrow *x_find(const struct xrow *v, size_t n, uint64_t pc);

#endif
