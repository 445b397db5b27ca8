/* Whole reads and writes of a descriptor: short counts and EINTR retried. */
#ifndef HT_IO_H
#define HT_IO_H

#include <stddef.h>

/* Exactly len bytes; 0, or -1 with errno set (0 when the file ends first). */
int io_read_full(int fd, void *buf, size_t len);

/* All len bytes; 0, or -1 with errno set. */
int io_write_full(int fd, const void *buf, size_t len);

#endif
