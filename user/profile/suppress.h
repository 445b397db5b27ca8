/*
 * --suppressions: LeakSanitizer's suppression files (leak:PATTERN lines),
 * and a built-in list for the C runtime's one-time allocations, as
 * heaptrack has.  A suppressed stack's live blocks are not leaks: they
 * leave --limit-leak and the leak views, counted in profile.suppressed.
 */
#ifndef HT_SUPPRESS_H
#define HT_SUPPRESS_H

#include <stdbool.h>

#include "profile/profile.h"

struct suppressions;
struct symbolizer;

/*
 * Read FILE's patterns into *s (made on first use).  A bad line is a
 * one-line error naming FILE:LINE; -1 then (or when it cannot be read).
 */
int suppress_read_file(struct suppressions **s, const char *path);
/* The same from text in memory (name: what errors call it). */
int suppress_read_text(struct suppressions **s, const char *text, const char *name);
/* Add the built-in list (--no-default-suppressions leaves it out). */
int suppress_add_builtin(struct suppressions **s);
/*
 * LSan's pattern match: '*' matches any run, '^' at the start and '$' at
 * the end anchor, otherwise the pattern may match anywhere in str.
 */
bool suppress_template_match(const char *pattern, const char *str);
/*
 * Mark p's stacks whose live blocks are suppressed: a pattern matches a
 * function, a source file or a module (file name or path) of any frame.
 * Their in-use counts go to p->suppressed.
 */
void suppress_apply(const struct suppressions *s, struct profile *p, struct symbolizer *given);
void suppress_free(struct suppressions *s);

#endif
