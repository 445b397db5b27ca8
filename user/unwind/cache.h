/*
 * --unwind dwarf's tables kept on disk ($XDG_CACHE_HOME/heaptrace, else
 * ~/.cache/heaptrace, util/cache.h): compiling a library's CFI takes tens
 * of milliseconds and every traced process maps the same few libraries.
 */
#ifndef HT_UNWIND_CACHE_H
#define HT_UNWIND_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/elfobj.h"

struct unwind_table;    /* only pointed at: table.c includes this header, so it does not include table.h */

/* One object's entry. */
struct unwind_cache {
	int dfd;                /* the cache directory; -1: no cache (none usable, or no name) */
	char name[256];         /* the object's file in it */
	uint64_t cfi_hash;      /* keyed hash of the bytes its rows are built from */
};

/*
 * The entry for the object o whose CFI is the section scn (.eh_frame when
 * eh, else .debug_frame).  Before the rows are built: building
 * decompresses a compressed .debug_frame in place, and the hash is of the
 * bytes in the file.  Always gives an entry to close, dfd -1 when the
 * cache cannot be used (the table is built anyway).
 */
void unwind_cache_open(struct unwind_cache *c, struct elfobj *o, Elf_Scn *scn, bool eh);

/*
 * 0 with the rows in out (from_cache set), or -1: no cache, or a file
 * missing, not exactly what unwind_cache_store writes, not ours alone, or
 * built from other bytes.
 */
int unwind_cache_load(const struct unwind_cache *c, struct unwind_table *out);

/* Store t's rows for the object; failures are said with -v and otherwise ignored. */
void unwind_cache_store(const struct unwind_cache *c, const struct unwind_table *t);

void unwind_cache_close(struct unwind_cache *c);

#endif
