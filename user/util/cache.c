#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "util/cache.h"
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

int cache_write(int dfd, const char *name, const void *data, size_t len)
{
	char tmp[512];
	const char *p = data;
	int fd;

	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) || len || renameat(dfd, tmp, dfd, name)) {
		unlinkat(dfd, tmp, 0);
		return -1;
	}
	return 0;
}
