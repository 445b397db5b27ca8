/*
 * Where in a function to put its probe.  A uprobe on an instruction the
 * kernel emulates (push reg, nop, jmp/jcc/call rel) costs ~0.65 us; one it
 * must single-step out of line (glibc free's `test rdi, rdi`) ~13 us; on a
 * 5-byte nop, kernel 6.18 turns the trap into a call (~0.45 us).  So the
 * probe goes on the cheapest instruction among the entry and those after
 * it up to which everything is harmless to skip: straight-line, cannot
 * fault, leaves the stack pointer and every argument register the BPF
 * program reads as they were at entry, and is not the target of any
 * branch.  On a tie, the earliest: an emulated entry stays the site.
 */
#ifndef HT_PLACEMENT_H
#define HT_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "util/elfobj.h"

struct placer;

/* What a hit of a uprobe costs, by how the kernel runs the probed instruction: cheapest first. */
enum probe_cost {
	PROBE_OPTIMIZED,        /* a 5-byte nop, rewritten into a call to a trampoline (kernel 6.18+) */
	PROBE_EMULATED,         /* emulated in the trap: push reg, nop, jmp/jcc/call rel */
	PROBE_SINGLESTEP,       /* copied out of line and single-stepped: a second trap */
};

/* "emulated ~0.65 us": the class and its typical cost per hit (bare metal). */
const char *probe_cost_name(enum probe_cost c);

struct placement {
	uint64_t vaddr;         /* the probed instruction */
	char insn[200];         /* its text, "push r12" */
	char why[480];          /* why here */
	enum probe_cost cost;
};

struct placer *placer_new(struct elfobj *o);
void placer_free(struct placer *pl);

/*
 * args_read: bit n set when the BPF program reads argument n (1..6) at the
 * probe.  at_entry forces the entry (--probe-at=entry).  Returns 0, or -1
 * when the function's code cannot be read.
 */
int placer_choose(struct placer *pl, uint64_t vaddr, uint64_t size, unsigned args_read,
		  bool at_entry, struct placement *out);

/*
 * Does any direct branch of the object land in (lo, hi]?  Code that is
 * moved (the fast path's displaced prologue) must be no branch's target.
 * 0, or -1 when the object cannot be read.
 */
int placer_branch_into(struct placer *pl, uint64_t lo, uint64_t hi, bool *hit);

/*
 * Does the function at vaddr (size bytes) make no call, and no jump out of
 * itself (directly, through a register or a table)?  Then nothing it runs
 * can be another traced function: uprobe sessions may skip its return.
 * False when it cannot be told (no size, too big, undecodable).
 */
bool placer_is_leaf(struct placer *pl, uint64_t vaddr, uint64_t size);

#endif
