/* Reading /proc: whole files, and the lines of a memory map. */
#ifndef HT_PROCFS_H
#define HT_PROCFS_H

#include <stdbool.h>

/* One line of a /proc/PID/maps text. */
struct map_entry {
	unsigned long lo, hi, offset;
	char perms[8];
	char path[4200];        /* "" for anonymous memory */
};

/* The next parsable line of maps text at *pos, advancing it; false at the end. */
bool maps_next(const char **pos, struct map_entry *e);

/* Read a whole (proc) file; NULL on error.  The size is not returned: proc files hold no NUL. */
char *read_text_file(const char *path);

#endif
