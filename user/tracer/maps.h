/* --mmap's tracepoints (maps.c). */
#ifndef HT_TRACER_MAPS_H
#define HT_TRACER_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer/state.h"

/*
 * --mmap: heaptrace itself makes system calls in process pid (the stub's
 * mappings) from now (on) until told otherwise: not its program's mappings.
 */
void tracer_remote(struct tracer *tr, pid_t pid, bool on);

#endif
