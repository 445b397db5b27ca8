/*
 * A profile's stacks as one tree of source frames, outermost at the root:
 * what flame graphs draw (-f html, -f svg).  Frames are merged by name and
 * call site (file:line), so a function's allocation sites stay apart.
 */
#ifndef HT_FLAME_H
#define HT_FLAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile.h"
#include "symbolize/symbolize.h"

#define FLAME_ROOT 0
#define FLAME_NONE UINT32_MAX

struct flame_frame {
	char *name;             /* owned */
	const char *file;       /* the symbolizer's, NULL when unknown */
	int line;
	const char *module;     /* the symbolizer's: where there is no file:line */
};

/* Node 0 is the root (frame FLAME_NONE); every node's parent has a smaller index. */
struct flame_node {
	uint32_t parent;
	uint32_t frame;
};

struct flame {
	struct flame_frame *frames;
	size_t n_frames, cap_frames;
	struct flame_node *nodes;
	size_t n_nodes, cap_nodes;
	uint32_t *leaf;         /* per profile stack: its innermost node */
	/* open addressing: frames by (name, file, line), nodes by (parent, frame) */
	uint32_t *frame_ix, *node_ix;
	size_t frame_mask, node_mask;
};

/* 0, or -1 when out of memory.  The frames borrow from sym: free the flame first. */
int flame_build(struct flame *fl, const struct profile *p, struct symbolizer *sym);
void flame_free(struct flame *fl);

/* Each node's value: the sum of its stacks' (vals: per profile stack, out: n_nodes). */
void flame_sums(const struct flame *fl, const struct profile *p, const int64_t *vals, int64_t *out);

/* A frame's call site as "file:line", "(module)" or "". */
const char *flame_site(const struct flame_frame *f, char *buf, size_t len);

/* s as text fit for XML and JSON strings: invalid UTF-8 and control characters become '?'. */
void flame_put_text(FILE *f, const char *s, int (*esc)(FILE *f, unsigned char c));

#endif
