/* What the maps cost in kernel memory (memory.c). */
#ifndef HT_TRACER_MEMORY_H
#define HT_TRACER_MEMORY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer/state.h"

/*
 * Kernel memory of the maps, in bytes.  The kernel's own figure (fdinfo
 * memlock) counts an element of a map that is not preallocated at its size,
 * not at the slab object it takes: here each is counted at its slab size
 * class, plus the memory cgroup's 8 bytes per object.  max: every map
 * full (the live map at --max-allocs, stacks at --max-stacks).
 */
struct tracer_memory {
	uint64_t now, max;              /* every map */
	uint64_t memlock;               /* the kernel's figure (fdinfo memlock), every map now */
	uint64_t live_now, live_max;    /* the live map's levels */
	uint64_t live_blocks;           /* blocks in them */
	uint32_t live_room;             /* blocks the levels made so far can hold */
	int levels;
	uint32_t block_bytes;           /* one live block's element, as counted */
	bool estimated;                 /* false: the kernel reports no per-element use (before 6.4): memlock */
	uint64_t progs_memlock;         /* the programs loaded (fdinfo memlock) */
	int progs, links;               /* programs loaded; links open (uprobe_multi links count one each) */
};
void tracer_memory(const struct tracer *tr, struct tracer_memory *m);
/* The links open now: perf-event ones, and uprobe_multi links (one each, whatever its probes). */
int tracer_links(const struct tracer *tr);

#endif
