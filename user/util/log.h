/* Diagnostics on stderr, every line prefixed "heaptrace: ". */
#ifndef HT_LOG_H
#define HT_LOG_H

#include <stdbool.h>
#include <stdio.h>

extern bool ht_verbose;

void ht_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ht_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  /* only with -v */

#endif
