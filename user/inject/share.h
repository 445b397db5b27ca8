/*
 * The stub's own stack walk (stub/unwind.c): what it needs in the target.
 * The CFI tables go in a memfd that the target maps read-only and shared
 * (struct ht_share in heaptrace.h), written by heaptrace through its own
 * shared mapping of the same file (user/unwind/ fills it); the walk's
 * facts (the main thread's stack, libc's signal restorer, the process's
 * id) go in the stub's data.
 */
#ifndef HT_INJECT_SHARE_H
#define HT_INJECT_SHARE_H

#include <stdint.h>

#include "stub/stub.h"

struct inject;
struct remote;

/*
 * With every thread stopped and the stub mapped at in->base: the tables'
 * mapping in the target, made (or an earlier session's of the same size,
 * emptied) and mapped in heaptrace too.  0, or -1: the stub's CFI walk is
 * off (said at -v); the BPF side walks.
 */
int share_install(struct inject *in, struct remote *r, const char *maps);

/* What the stub's walk is told (stub_data.w) for the process of r. */
void share_walk_info(struct inject *in, struct remote *r, struct stub_walk_info *w);

/* heaptrace's side of the mapping goes (the target's stays: a thread may be reading it). */
void share_free(struct inject *in);

#endif
