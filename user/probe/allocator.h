/*
 * The objects a target loads, and which of them holds the malloc it
 * actually calls: the executable itself when static or when it defines
 * malloc, an allocator preloaded or linked before libc, or libc.
 */
#ifndef HT_ALLOCATOR_H
#define HT_ALLOCATOR_H

#include "process/target.h"

#define MAX_OBJS 256

/* An ordered, duplicate-free list of object paths (valid from our mount namespace). */
struct objlist {
	char *p[MAX_OBJS];
	int n;
	const char *root;       /* "/proc/PID/root" prefix of -p paths, "" for a launch */
	char root_buf[32];
};

/*
 * The target's objects in symbol search order: the executable first, then
 * LD_PRELOAD and its dependencies breadth first (a launch), or the mapped
 * objects with libc last (-p).  Returns 0 or -1 (printed).
 */
int target_objects(const struct target *t, struct objlist *objs);
void objlist_free(struct objlist *objs);

/*
 * The objects of the program a process has just executed (stopped at the
 * exec, its libraries not mapped yet), in the loader's order, with the
 * LD_PRELOAD and LD_LIBRARY_PATH of its environment; root: "" or
 * "/proc/PID/root", the prefix that reaches its files.  0 or -1 (printed).
 */
int image_objects(pid_t pid, const char *root, struct objlist *objs);

/* The object's path as the target names it (without the /proc/PID/root prefix). */
const char *objlist_name(const struct objlist *objs, int i);

/*
 * *primary: the object whose malloc the target calls (override: --lib);
 * *libc: libc as well, when it is another object that is also loaded (its
 * own entry points, pvalloc say, still allocate), else NULL.
 * Returns 0, or -1 with the error printed.
 */
int allocator_choose(const struct objlist *objs, const char *override, char **primary, char **libc);

#endif
