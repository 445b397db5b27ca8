#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "util/io.h"

static int io_full(int fd, void *buf, size_t len, bool writing)
{
	for (size_t done = 0; done < len;) {
		ssize_t r = writing ? write(fd, (const char *)buf + done, len - done) :
				      read(fd, (char *)buf + done, len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			errno = 0;
		if (r <= 0)
			return -1;
		done += r;
	}
	return 0;
}

int io_read_full(int fd, void *buf, size_t len)
{
	return io_full(fd, buf, len, false);
}

int io_write_full(int fd, const void *buf, size_t len)
{
	return io_full(fd, (void *)buf, len, true);
}
