/*
 * Built-in presets: the allocators of runtimes and libraries people meet
 * every day, written as --sym and --free-sym specs that --preset list
 * prints, so that a user can read, copy and change them.
 */
#ifndef HT_PRESETS_H
#define HT_PRESETS_H

#include <stdbool.h>
#include <stdio.h>

#include "probe/symspec.h"

/*
 * The i-th spec of preset name: its text and kind, and the option it came
 * from ("preset NAME", for messages).  Returns 0; 1 past its last spec;
 * -1 when there is no such preset.
 */
int preset_spec(const char *name, int i, const char **text, enum ht_spec_kind *kind, const char **option);

/* Every preset, what it is for, and its specs as command-line options. */
void presets_print(FILE *f);

/* Does the preset a spec came from (its option, "preset python") want CPython's allocator tables? */
bool preset_cpython(const char *option);

/* The names, as "python, jemalloc", for messages. */
const char *preset_names(void);

/* Preset i's name, NULL past the last. */
const char *preset_name(int i);

#endif
