#ifndef HT_OUTFILE_H
#define HT_OUTFILE_H

#include <limits.h>
#include <stdio.h>

/* A profile being written under a temporary name beside its destination. */
struct outfile {
	const char *path;
	char tmp[PATH_MAX];
	FILE *f;
};

/*
 * Before tracing: can a profile be written to path?  Refuses symbolic links,
 * anything but a regular file, and another user's file in a sticky directory
 * (/tmp); tries to create a file in the directory.  0, or -1 with the reason
 * printed.  Nothing at path is created or touched.
 */
int outfile_check(const char *path);

/*
 * A new, empty, exclusive file beside path; NULL with errno.  At a FIFO
 * (written in place), waits for its reader until SIGINT, SIGTERM or SIGHUP:
 * then NULL with errno ECANCELED, the loss already said.
 */
FILE *outfile_begin(struct outfile *of, const char *path);

/* The file, complete, replaces path.  -1 with errno (the reason printed when the data was kept). */
int outfile_commit(struct outfile *of);

/* Drop the unfinished file. */
void outfile_abort(struct outfile *of);

#endif
