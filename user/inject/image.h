#ifndef HT_INJECT_IMAGE_H
#define HT_INJECT_IMAGE_H
/*
 * The stub's file (image.c), made in heaptrace's memory for the place the
 * stub will have in the target (in->base): the blob, each function's
 * entry_i and orig_i, the configuration, and the fast entries of a
 * sampled session (fast.h).  Sets each function's fast and direct.
 */
#include <stddef.h>
#include <stdint.h>

#include "inject/state.h"

struct probe_plan;

/* img: STUB_FILE_SIZE bytes.  0, or -1 with why (a displaced prologue that does not fit). */
int image_build(struct inject *in, const struct probe_plan *plan, uint8_t *img, char *why, size_t len);

#endif
