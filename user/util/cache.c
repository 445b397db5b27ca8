#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "util/cache.h"
#include "util/io.h"
#include "util/log.h"

int cache_dir_open(char *path, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char base[4096], dir[4096 + 16];
	struct stat st;
	int fd;

	if (xdg && *xdg == '/')
		snprintf(base, sizeof(base), "%s", xdg);
	else if (home && *home == '/')
		snprintf(base, sizeof(base), "%s/.cache", home);
	else
		return -1;
	snprintf(dir, sizeof(dir), "%s/heaptrace", base);
	mkdir(base, 0700);
	mkdir(dir, 0700);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ht_info("cache %s: %s", dir, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		ht_info("cache %s: not ours alone; not using it", dir);
		close(fd);
		return -1;
	}
	if (path)
		snprintf(path, len, "%s", dir);
	return fd;
}

int cache_writev(int dfd, const char *name, const struct iovec *iov, int n)
{
	char tmp[512];
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
	unlinkat(dfd, tmp, 0);  /* a leftover of a killed heaptrace of this pid: O_EXCL would refuse it */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	for (int i = 0; i < n && !err; i++)
		err = io_write_full(fd, iov[i].iov_base, iov[i].iov_len);
	if (close(fd))
		err = -1;
	if (err || renameat(dfd, tmp, dfd, name)) {
		int e = errno;

		unlinkat(dfd, tmp, 0);
		errno = e;
		return -1;
	}
	return 0;
}

int cache_write(int dfd, const char *name, const void *data, size_t len)
{
	struct iovec iov = { (void *)data, len };

	return cache_writev(dfd, name, &iov, 1);
}
