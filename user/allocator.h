/*
 * Which object holds the malloc the target actually calls: the executable
 * itself when static or when it defines malloc, an allocator preloaded or
 * linked before libc, or libc.
 */
#ifndef HT_ALLOCATOR_H
#define HT_ALLOCATOR_H

#include "target.h"

/*
 * Sets *path (malloc'd) to the object to probe, a path valid from our mount
 * namespace.  Returns 0, or -1 with the error printed.
 */
int allocator_find(const struct target *t, char **path);

#endif
