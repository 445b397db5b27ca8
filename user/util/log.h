/* Diagnostics on stderr, every line prefixed "heaptrace: ". */
#ifndef HT_LOG_H
#define HT_LOG_H

#include <stdbool.h>

extern bool ht_verbose;

void ht_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ht_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* only with -v */

/*
 * Create an output file for writing: mode 0644, truncated, and never through
 * a symbolic link planted in a shared directory (O_NOFOLLOW).  NULL with
 * errno set.
 */
#include <stdio.h>
FILE *create_output(const char *path);

#endif
