/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stub's stack walk (unwind.c): a recorded call's stack, walked in the
 * process from the traced function's entry, exactly as the BPF walk of
 * --unwind would walk it, or not at all.  Self-contained: a caller needs
 * only the entry's registers (the record site's now; a batch's later).
 */
#ifndef HT_STUB_UNWIND_H
#define HT_STUB_UNWIND_H

#include "stub.h"

/* The caller's registers just after the traced call returned. */
struct stub_regs {
	__u64 pc;               /* the return address (at the entry's sp) */
	__u64 sp;               /* the entry's sp + 8 */
	__u64 fp;               /* rbp at the entry */
};

/*
 * Walk from r into *out (tp: the thread pointer).  0: walked, *out holds
 * what the BPF walk would have found; -1: left to the BPF walk (a frame
 * off the thread's proved stack, code of no published object, a signal
 * restorer in fp mode, tables changing meanwhile): out->depth frames, those
 * walked before it gave up (unhashed), which only a caller that cannot
 * hand the walk to BPF uses (stub/ring.c).  python: CPython's loop frames
 * give way to the Python frames they run (python.c): an allocation's
 * stack, not a free's (a wrapping free's is for an unmatched one, and
 * would make a stack of every line that frees).
 */
int stub_walk(const struct stub_regs *r, __u64 tp, struct ht_stub_stack *out, int python);

/* out->hash: the stack map's key of out's frames, as the BPF side hashes them (a failed walk's too). */
void stub_hash_frames(struct ht_stub_stack *out);

#endif
