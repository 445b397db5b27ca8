/*
 * Profile files: where one may be written, and writing it so that nobody
 * sees half of it and nothing is lost or destroyed when tracing fails.
 *
 * heaptrace usually runs as root and often writes into /tmp.  Opening the
 * -o path itself would let another local user decide what root writes to:
 * a FIFO there blocks the open forever, a planted regular file receives the
 * profile and stays the planter's.  So the profile goes to a new file that
 * heaptrace creates (O_EXCL) beside the destination, and is renamed over it
 * once complete: rename() opens nothing, a failed run leaves the previous
 * file as it was, and a reader sees the old profile or the whole new one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/procfs.h"
#include "output/outfile.h"

static void dir_of(const char *path, char *dir, size_t n)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, n, ".");
	else if (slash == path)
		snprintf(dir, n, "/");
	else
		snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* Why path must not be replaced, or NULL.  Its directory is dir (stat'ed as d). */
static const char *refuse(const char *path, const struct stat *d, char *why, size_t n)
{
	struct stat st;
	uid_t uid;
	gid_t gid;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return NULL;
		snprintf(why, n, "%s", strerror(errno));
		return why;
	}
	if (S_ISLNK(st.st_mode))
		return "it is a symbolic link; heaptrace does not write through links";
	if (S_ISDIR(st.st_mode))
		return "it is a directory";
	invoking_user(&uid, &gid);
	/* Written in place (see in_place()): a device only root can make, the user's own FIFO. */
	if (S_ISCHR(st.st_mode) || (S_ISFIFO(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == uid)))
		return NULL;
	if (!S_ISREG(st.st_mode))
		return "it is not a regular file (another user's FIFO, a socket or a block device)";
	/* In a sticky directory (/tmp) a file of another user was planted, not ours to replace. */
	if ((d->st_mode & S_ISVTX) && st.st_uid != geteuid() && st.st_uid != uid) {
		snprintf(why, n, "it belongs to user %u in the sticky directory; remove it or choose another name",
			 (unsigned)st.st_uid);
		return why;
	}
	return NULL;
}

/*
 * A FIFO's open waits for a reader, for ever if none comes.  So it is
 * tried without waiting, again every 50 ms, with SIGINT, SIGTERM and SIGHUP
 * taken meanwhile (sigtimedwait: none is missed between two tries): one of
 * them ends the wait, the output is lost and that is said; errno ECANCELED.
 * One that was blocked before (a signalfd's, while tracing) is raised again
 * for its owner.  Ignored ones (nohup) stay ignored.
 */
static int open_fifo(const char *path)
{
	static const int stop[] = { SIGINT, SIGTERM, SIGHUP };
	sigset_t set, old;
	int fd;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(stop) / sizeof(stop[0]); i++) {
		struct sigaction sa;
		if (sigaction(stop[i], NULL, &sa) || sa.sa_handler != SIG_IGN)
			sigaddset(&set, stop[i]);
	}
	pthread_sigmask(SIG_BLOCK, &set, &old);
	for (;;) {
		fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0 || errno != ENXIO)
			break;
		struct timespec gap = { 0, 50 * 1000 * 1000 };
		int sig = sigtimedwait(&set, NULL, &gap);
		if (sig > 0) {
			ht_err("SIG%s while waiting for a reader of the FIFO %s: nothing was written, the profile is lost",
			       sigabbrev_np(sig), path);
			if (sigismember(&old, sig))
				raise(sig);
			errno = ECANCELED;
			break;
		}
	}
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* Written like any file from here: a slow reader is waited for. */
	if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		e = errno;
		close(fd);
		fd = -1;
	}
	errno = e;
	return fd;
}

/*
 * -o /dev/null, a terminal, or a FIFO of the user's own is no file to
 * replace: written where it is, as before.
 */
static bool in_place(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

int outfile_check(const char *path)
{
	char dir[PATH_MAX], why[128];
	const char *r;
	struct stat d;

	if (!*path) {
		ht_err("an empty output file name");
		return -1;
	}
	dir_of(path, dir, sizeof(dir));
	if (stat(dir, &d)) {
		ht_err("cannot write %s: %s: %s", path, dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(d.st_mode)) {
		ht_err("cannot write %s: %s is not a directory", path, dir);
		return -1;
	}
	if ((r = refuse(path, &d, why, sizeof(why)))) {
		ht_err("will not write %s: %s", path, r);
		return -1;
	}
	if (in_place(path))
		return 0;       /* opened when written: a FIFO's reader may come later */
	/* A real trial, not access(): root passes access() on a read-only file system. */
	struct outfile of;
	if (!outfile_begin(&of, path)) {
		ht_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	outfile_abort(&of);
	return 0;
}

FILE *outfile_begin(struct outfile *of, const char *path)
{
	char dir[PATH_MAX];
	const char *base = strrchr(path, '/');
	int fd;

	memset(of, 0, sizeof(*of));
	of->path = path;
	if (in_place(path)) {
		struct stat st;
		if (!lstat(path, &st) && S_ISFIFO(st.st_mode))
			fd = open_fifo(path);
		else
			fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return NULL;
		if (!(of->f = fdopen(fd, "w")))
			close(fd);
		return of->f;
	}
	dir_of(path, dir, sizeof(dir));
	base = base ? base + 1 : path;
	/* Hidden, beside the destination (rename() does not cross file systems). */
	if (snprintf(of->tmp, sizeof(of->tmp), "%s/.%s.XXXXXX", dir, base) >= (int)sizeof(of->tmp)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	/* mkostemp: O_EXCL and mode 0600; the mode is widened at the end like a plain open's. */
	if ((fd = mkostemp(of->tmp, O_CLOEXEC)) < 0)
		return NULL;
	if (!(of->f = fdopen(fd, "w"))) {
		int e = errno;
		close(fd);
		unlink(of->tmp);
		errno = e;
		return NULL;
	}
	return of->f;
}

void outfile_abort(struct outfile *of)
{
	if (of->f) {
		fclose(of->f);
		if (*of->tmp)
			unlink(of->tmp);
		of->f = NULL;
	}
}

int outfile_commit(struct outfile *of)
{
	char dir[PATH_MAX], why[128];
	const char *r = NULL;
	mode_t mask = umask(0);
	struct stat d;
	uid_t uid;
	gid_t gid;
	int fd = fileno(of->f), e;

	umask(mask);
	if (!*of->tmp) {
		int r = fclose(of->f);
		of->f = NULL;
		return r ? -1 : 0;
	}
	invoking_user(&uid, &gid);
	/* What open(path, O_CREAT, 0644) would have made, owned by the user who asked for it. */
	if (fflush(of->f) || fchmod(fd, 0644 & ~mask) || (geteuid() == 0 && uid && fchown(fd, uid, gid)))
		goto fail;
	if (fclose(of->f)) {
		of->f = NULL;
		goto fail;
	}
	of->f = NULL;
	/* Planted since outfile_check(): keep the profile under its temporary name and say so. */
	dir_of(of->path, dir, sizeof(dir));
	if (!stat(dir, &d) && (r = refuse(of->path, &d, why, sizeof(why)))) {
		ht_err("will not replace %s (%s): the profile is in %s", of->path, r, of->tmp);
		errno = EEXIST;
		return -1;
	}
	if (rename(of->tmp, of->path)) {
		e = errno;
		ht_err("cannot rename the profile to %s: %s; it is in %s", of->path, strerror(e), of->tmp);
		errno = e;
		return -1;
	}
	return 0;
fail:
	/* Nothing complete was written: no partial file stays behind. */
	e = errno;
	if (of->f)
		fclose(of->f);
	of->f = NULL;
	unlink(of->tmp);
	errno = e;
	return -1;
}
