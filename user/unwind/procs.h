/*
 * --unwind dwarf: the CFI tables of the target's objects, in the BPF maps.
 * Tables are compiled (or taken from the cache) before the BPF object is
 * loaded, so the row array can be sized; objects mapped later (dlopen) get
 * theirs at the next memory-map refresh, into the headroom.
 */
#ifndef HT_UNWIND_H
#define HT_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heaptrace.h"

struct tracer;

struct unwind_object {
	char *path;
	struct ht_unwind_object_key key;
	struct ht_unwind_object obj;
	struct ht_unwind_row *rows;     /* kept: a reloaded tracer needs them again */
	bool cached;
	bool loaded;                    /* its rows are in the BPF array */
};

/*
 * A process's tables for its stub's walk (struct ht_share): heaptrace's
 * side of the mapping, the rows it has room for, the process's code as
 * last seen (its index), and which objects' rows are in it (only those of
 * its own mappings are copied: a compiler's child need not carry the
 * driver's).
 */
struct unwind_share {
	struct ht_share *map;
	uint32_t rows;
	char *maps, *root;
	bool *copied;                   /* by object (struct unwind's objs) */
	size_t copied_cap;
};

struct unwind {
	struct unwind_object *objs;
	size_t n, cap;
	size_t rows;                    /* rows of all tables */
	size_t capacity;                /* rows the BPF array holds */
	struct ht_unwind_row *map;      /* the mmapped array, once loaded */
	struct tracer *tr;
	size_t no_room;                 /* objects whose table did not fit */
	double build_ms;
	size_t from_cache;
	uint64_t code_maps;             /* a hash of the code mappings last seen: cached by the BPF side */
	bool execs;                     /* new programs may be executed (a script, --follow-fork): more room */
	/* Each stub's tables in its process, by the process's slot (user/inject/share.c maps them). */
	struct unwind_share shares[HT_MAX_PROCS];
};

/*
 * Compile the tables of these objects (paths as seen from heaptrace).
 * Objects without CFI are skipped silently; errors are counted, not fatal.
 */
void unwind_add_objects(struct unwind *u, char *const *paths, int n);

/* Rows the BPF array must hold: those built, and room for libraries loaded later. */
size_t unwind_capacity(const struct unwind *u);

/* Copy the tables into the loaded tracer's maps (again, for a reloaded one).  0 or -1 (printed). */
int unwind_load(struct unwind *u, struct tracer *tr);

/*
 * A new memory map of a traced process: tables for code objects not seen
 * before (root: "/proc/PID/root" or "" to reach its paths), and the BPF
 * side's caches of code mappings started afresh when code moved.
 */
void unwind_maps_changed(struct unwind *u, const char *maps, const char *root);

/*
 * The process in this slot executed a new program, stopped before its
 * first instruction: tables for its objects (paths as seen from
 * heaptrace; its libraries are not mapped yet), and the slot's cache of
 * code mappings replaced with those of maps, the new image's.
 */
void unwind_exec(struct unwind *u, uint32_t slot, char *const *paths, int n, const char *maps, const char *root);

/*
 * The tables' mapping in the process of this slot (heaptrace's side of
 * it, rows its room), or NULL when it goes: its code mappings (maps, its
 * memory map now; paths under root) are published as its index with their
 * objects' tables, now and at each change the slot is told of.
 */
void unwind_share(struct unwind *u, uint32_t slot, struct ht_share *map, uint32_t rows, const char *maps,
		  const char *root);

void unwind_free(struct unwind *u);

/* The BPF side's key of an object file (its device and inode); 0, or -1 when it is no regular file. */
int unwind_object_key(const char *path, struct ht_unwind_object_key *key);

#endif
