/* The live map's levels (levels.c), as the profile reads them. */
#ifndef HT_TRACER_LEVELS_H
#define HT_TRACER_LEVELS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer/state.h"

/* The live map's levels made so far: their count, fds into fds[HT_LIVE_LEVELS]. */
int tracer_live_fds(const struct tracer *tr, int fds[HT_LIVE_LEVELS]);

#endif
