/* The growth table of `heaptrace diff --growth` (profile/growth.h's classes). */
#ifndef HT_OUTPUT_GROWTH_H
#define HT_OUTPUT_GROWTH_H

#include <stdio.h>

#include "profile/growth.h"
#include "symbolize/symbolize.h"

/* At most n rows; unit: what the slope is per ("s" or "step"). */
void output_growth_table(FILE *f, const struct growth *g, struct symbolizer *sym, size_t n, const char *unit);

#endif
