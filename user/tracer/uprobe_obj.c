/*
 * The uprobe programs' object (the Makefile's heaptrace_uprobes.bpf.o):
 * heaptrace.bpf.c built with its checked-once functions inlined
 * (config.bpf.h's HT_CHECKED_ONCE), faster at each call and slower to
 * verify.  Its skeleton names its struct heaptrace as the main one's does
 * (the Makefile checks that the two are the same), so an instance of it is
 * held, shares the main object's maps and is destroyed as the main
 * object's other instances are.  Only this file includes it: its static
 * functions would clash with the main skeleton's.
 */
#include "tracer/state.h"  /* before the skeleton: it names our shared structs */
#include "heaptrace_uprobes.skel.h"
#include "tracer/internal.h"

struct heaptrace *tracer_open_uprobes(const struct bpf_object_open_opts *opts)
{
	return heaptrace__open_opts(opts);
}
