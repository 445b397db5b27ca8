/* heaptrace's on-disk cache: $XDG_CACHE_HOME/heaptrace, else ~/.cache/heaptrace. */
#ifndef HT_CACHE_H
#define HT_CACHE_H

#include <stddef.h>
#include <sys/uio.h>

/*
 * The cache directory, opened (and its path into path, if not NULL):
 * created 0700 when missing, and used only when it is ours and nobody
 * else can write to it, since what it holds steers the BPF programs.  -1
 * when there is no usable one (said with -v).
 */
int cache_dir_open(char *path, size_t len);

/*
 * name in the directory dfd, written whole under a temporary name then
 * renamed: readers see all or none.  0, or -1 with errno set.
 */
int cache_write(int dfd, const char *name, const void *data, size_t len);

/* The same from n pieces, written one after the other. */
int cache_writev(int dfd, const char *name, const struct iovec *iov, int n);

#endif
