/*
 * What the test targets share to talk to the harness without stdio (whose
 * buffers would allocate): write a line, and block on a FIFO for the next
 * step.
 */
#ifndef HT_TEST_SYNC_H
#define HT_TEST_SYNC_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Write s whole to standard output. */
static inline void say(const char *s)
{
	size_t n = strlen(s);
	while (n > 0) {
		ssize_t w = write(1, s, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			_exit(2);
		}
		s += w;
		n -= (size_t)w;
	}
}

/* Block until a writer opens fifo, read up to a newline or end of file. */
static inline void wait_line(const char *fifo)
{
	int fd;
	char c;

	while ((fd = open(fifo, O_RDONLY)) < 0)
		if (errno != EINTR)
			_exit(2);
	for (;;) {
		ssize_t r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || c == '\n')
			break;
	}
	close(fd);
}

#endif
