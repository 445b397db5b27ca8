/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Python frames in place of the interpreter loop's native ones (python.c). */
#ifndef HT_STUB_PYTHON_H
#define HT_STUB_PYTHON_H

#include "stub.h"

/*
 * Replace in st the native frames of CPython's loop by the Python frames
 * they run (tp: the thread pointer).  1: st changed (its hash is the
 * caller's to compute again); 0: left as it was.
 */
int py_merge(struct ht_stub_stack *st, __u64 tp);

#endif
