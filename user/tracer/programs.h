/* The programs loaded when first needed (programs.c). */
#ifndef HT_TRACER_PROGRAMS_H
#define HT_TRACER_PROGRAMS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer/state.h"

/*
 * Allocators as uprobe sessions (tracer_config.session): loads the session
 * program if not yet.  false: no sessions (not asked for, or the kernel
 * cannot load the program: said); plain return probes then.
 */
bool tracer_sessions(struct tracer *tr);

#endif
