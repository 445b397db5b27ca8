#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/procfs.h"

char *read_text_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 65536;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	while (buf) {
		if (len + 1 >= cap) {
			char *n = realloc(buf, cap *= 2);
			if (!n) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = n;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			buf = NULL;
			break;
		}
		if (r == 0)
			break;
		len += r;
	}
	close(fd);
	if (buf)
		buf[len] = '\0';
	return buf;
}

bool maps_next(const char **pos, struct map_entry *e)
{
	while (*pos && **pos) {
		const char *line = *pos, *nl = strchrnul(line, '\n');
		size_t len = nl - line < (long)sizeof(e->path) - 1 ? (size_t)(nl - line) : sizeof(e->path) - 1;
		int n = 0;

		*pos = *nl ? nl + 1 : nl;
		/* A copy of the one line, so no conversion can run on into the next. */
		memcpy(e->path, line, len);
		e->path[len] = '\0';
		if (sscanf(e->path, "%lx-%lx %7s %lx %*s %*s %n", &e->lo, &e->hi, e->perms, &e->offset, &n) < 4 ||
		    !n)
			continue;
		memmove(e->path, e->path + n, len - n + 1);
		return true;
	}
	return false;
}
