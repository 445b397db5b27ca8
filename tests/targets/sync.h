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

/*
 * One line from fifo into buf (without the newline; NULL: discard it),
 * blocking until a writer sends one.  The FIFO stays open between calls, so
 * a writer may send several lines at once; it is reopened at end of file.
 * An end of file with nothing read is not a line: it is the previous writer
 * closing late, and taking it for the next release would run a phase early.
 * A line cut by end of file counts as a line.  One FIFO per process.
 */
static inline void read_fifo_line(const char *fifo, char *buf, size_t size)
{
	static int fd = -1;
	size_t len = 0;
	char c;

	for (;;) {
		while (fd < 0 && (fd = open(fifo, O_RDONLY)) < 0)
			if (errno != EINTR)
				_exit(2);
		ssize_t r = read(fd, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			_exit(2);
		if (r == 0) {
			close(fd);
			fd = -1;
			if (len)
				break;
			continue;
		}
		if (c == '\n')
			break;
		if (buf && len + 1 < size)
			buf[len] = c;
		len++;
	}
	if (buf && size)
		buf[len < size ? len : size - 1] = '\0';
}

/* Block until a line comes through fifo. */
static inline void wait_line(const char *fifo)
{
	read_fifo_line(fifo, NULL, 0);
}

#endif
