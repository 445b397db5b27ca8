/*
 * CPython's allocator tables.  PyObject_Malloc and its kin call through a
 * table of function pointers (_PyObject, _PyMem in 3.8-3.11; the
 * _PyRuntime.allocators fields in 3.12+): probing the exported wrappers
 * sees the calls an LTO build did not inline.  The wrappers' code names
 * the table's slot (a rip-relative load, or one through the GOT), and the
 * file's data (or its relocation) the function the slot holds: that
 * function is probed too.  An LTO+PGO build (Debian's) also compares the
 * slot with that function and inlines its body wherever it is equal, so
 * that no call is left to probe: those slots are recorded, for
 * inject/pytables.c to point them at a jump to the same function.
 */
#ifndef HT_CPYTHON_H
#define HT_CPYTHON_H

#include <stdbool.h>
#include <stdint.h>

#include "probe/allocator.h"
#include "probe/plan.h"
#include "probe/pyframes.h"

#define CPY_MAX_SLOTS 16
#define CPY_SMALL_REQUEST 512           /* pymalloc's SMALL_REQUEST_THRESHOLD (3.8 and later) */

struct cpy_slot {
	char *path;             /* the object that holds the table and the function */
	const char *wrapper;    /* PyObject_Malloc, ... */
	uint64_t slot;          /* the table's function pointer: its ELF virtual address */
	uint64_t func;          /* the function it holds (ELF virtual address) */
	uint64_t func_off;      /* its file offset: where the process has it tells the object's load bias */
	/*
	 * The object's code compares slots with their functions and inlines
	 * them when equal (seen in one wrapper or more: every slot of the
	 * object is marked, since the other comparisons are elsewhere).
	 */
	bool inlined;
};

struct cpy_tables {
	struct cpy_slot s[CPY_MAX_SLOTS];
	int n;
	struct cpy_frames frames;       /* where the interpreter found keeps its frames */
};

/*
 * The first of objs that defines PyObject_Malloc: its wrappers' table
 * functions, probed (option names them in messages), their slots in t
 * (appended; an object already in t is skipped).  Says at -v what was
 * found and how.  1: CPython found, 0: not, -1: an error (printed).
 */
int cpython_plan(struct cpy_tables *t, struct probe_plan *plan, const struct objlist *objs, const char *option);

/*
 * A CPython program traced without --preset python: where its frames are
 * (t->frames), for the malloc family's stacks; its pymalloc objects are
 * the preset's.  Says so, or why the frames are off, once.  1: CPython
 * found (or planned already), 0: not.
 */
int cpython_frames(struct cpy_tables *t, const struct objlist *objs);

void cpython_free(struct cpy_tables *t);

#endif
