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
 * Block until a line comes through fifo.  An end of file without one is
 * not a line: it is the previous writer closing late (the open succeeds
 * while it still holds the FIFO), and taking it for the next release would
 * run a phase early.  Reopen and wait for a real writer instead.
 */
static inline void wait_line(const char *fifo)
{
	for (;;) {
		int fd;
		char c;

		while ((fd = open(fifo, O_RDONLY)) < 0)
			if (errno != EINTR)
				_exit(2);
		for (;;) {
			ssize_t r = read(fd, &c, 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				_exit(2);
			if (r == 0)
				break;
			if (c == '\n') {
				close(fd);
				return;
			}
		}
		close(fd);
	}
}

#endif
