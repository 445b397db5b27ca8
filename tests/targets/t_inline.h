/* Part of t_inline.c: an inline function in another file than its callers,
 * so that the call site's file (DW_AT_call_file) differs from its own. */
#include <stdlib.h>

static inline __attribute__((always_inline)) void *leaf_alloc(size_t n)
{
	return malloc(n); /* @site leaf_alloc */
}
