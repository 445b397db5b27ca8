/* The malloc family, as --sym and --free-sym specs. */
#ifndef HT_MALLOC_FAMILY_H
#define HT_MALLOC_FAMILY_H

#include "probe/symspec.h"

/* The i-th function of the built-in malloc family as a parsed spec (free it); -1 past the last. */
int malloc_family(int i, struct sym_spec *out);

#endif
