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
#include "unwind/rows.h"

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

/*
 * The extent of the .eh_frame entry (FDE) of path that holds vaddr: where
 * a function without a symbol (an LTO build's local one) starts and how
 * long it is.  0, or -errno (-ENOENT: no entry holds it).
 */
int unwind_fde_extent(const char *path, uint64_t vaddr, uint64_t *start, uint64_t *size);

/* The row that holds pc (an ELF virtual address), as the BPF search finds it; NULL before the first row. */
const struct ht_unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t pc);

#endif
