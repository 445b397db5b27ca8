/* Stacks into a tree of source frames, for the flame graphs of -f html and -f svg. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/flame.h"
#include "util/array.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return mix(h, 0);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static uint64_t frame_hash(const char *name, const char *file, int line)
{
	return mix(hash_str(hash_str(0xcbf29ce484222325ull, name), file), (uint64_t)line);
}

static uint64_t node_hash(uint32_t parent, uint32_t frame)
{
	return mix(mix(0, parent), frame);
}

/* Tables keep their load at most 1/2; a slot holds an index + 1, 0: empty. */
static int grow_index(uint32_t **ix, size_t *mask, size_t n, uint64_t (*key)(const struct flame *, uint32_t),
		      const struct flame *fl)
{
	size_t slots = *ix ? 2 * (*mask + 1) : 1024;
	uint32_t *g = calloc(slots, sizeof(*g));

	if (!g)
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t k = key(fl, i) & (slots - 1);
		while (g[k])
			k = (k + 1) & (slots - 1);
		g[k] = i + 1;
	}
	free(*ix);
	*ix = g;
	*mask = slots - 1;
	return 0;
}

static uint64_t frame_key(const struct flame *fl, uint32_t i)
{
	return frame_hash(fl->frames[i].name, fl->frames[i].file, fl->frames[i].line);
}

static uint64_t node_key(const struct flame *fl, uint32_t i)
{
	return node_hash(fl->nodes[i].parent, fl->nodes[i].frame);
}

static uint32_t add_frame(struct flame *fl, const char *name, const struct sym_frame *sf)
{
	const char *file = sf ? sf->file : NULL, *module = sf && !file ? sf->module : NULL;
	int line = file ? sf->line : 0;
	size_t k;

	if (2 * (fl->n_frames + 1) > fl->frame_mask + 1 &&
	    grow_index(&fl->frame_ix, &fl->frame_mask, fl->n_frames, frame_key, fl))
		return FLAME_NONE;
	for (k = frame_hash(name, file, line) & fl->frame_mask; fl->frame_ix[k]; k = (k + 1) & fl->frame_mask) {
		const struct flame_frame *f = &fl->frames[fl->frame_ix[k] - 1];
		if (f->line == line && same_str(f->file, file) && !strcmp(f->name, name))
			return fl->frame_ix[k] - 1;
	}
	if (ARRAY_RESERVE(fl->frames, fl->cap_frames, fl->n_frames + 1, 256))
		return FLAME_NONE;
	char *copy = strdup(name);
	if (!copy)
		return FLAME_NONE;
	fl->frames[fl->n_frames] = (struct flame_frame){ copy, file, line, module };
	fl->frame_ix[k] = fl->n_frames + 1;
	return fl->n_frames++;
}

static uint32_t add_node(struct flame *fl, uint32_t parent, uint32_t frame)
{
	size_t k;

	if (frame == FLAME_NONE)
		return FLAME_NONE;
	if (2 * (fl->n_nodes + 1) > fl->node_mask + 1 && grow_index(&fl->node_ix, &fl->node_mask, fl->n_nodes, node_key, fl))
		return FLAME_NONE;
	for (k = node_hash(parent, frame) & fl->node_mask; fl->node_ix[k]; k = (k + 1) & fl->node_mask) {
		const struct flame_node *n = &fl->nodes[fl->node_ix[k] - 1];
		if (n->parent == parent && n->frame == frame)
			return fl->node_ix[k] - 1;
	}
	if (ARRAY_RESERVE(fl->nodes, fl->cap_nodes, fl->n_nodes + 1, 1024))
		return FLAME_NONE;
	fl->nodes[fl->n_nodes] = (struct flame_node){ parent, frame };
	fl->node_ix[k] = fl->n_nodes + 1;
	return fl->n_nodes++;
}

/* A stack's path from the root, inline frames expanded; the names are collapsed's. */
static uint32_t add_stack(struct flame *fl, const struct prof_stack *s, struct symbolizer *sym)
{
	uint32_t node = FLAME_ROOT;
	char name[256];

	if (!s->depth)
		node = add_node(fl, node, add_frame(fl, "[lost stack]", NULL));
	if (s->flags & HT_STACK_TRUNCATED)
		node = add_node(fl, node, add_frame(fl, "[truncated]", NULL));
	for (uint32_t i = s->depth; i-- > 0 && node != FLAME_NONE;) {
		const struct sym_frame *fr;
		int n = sym_lookup(sym, s->pcs[i], true, &fr);

		for (int k = n; k-- > 0 && node != FLAME_NONE;)
			node = add_node(fl, node, add_frame(fl, sym_frame_label(&fr[k], s->pcs[i], name, sizeof(name)), &fr[k]));
	}
	return node;
}

int flame_build(struct flame *fl, const struct profile *p, struct symbolizer *sym)
{
	memset(fl, 0, sizeof(*fl));
	fl->nodes = malloc(1024 * sizeof(*fl->nodes));
	fl->leaf = calloc(p->n ? p->n : 1, sizeof(*fl->leaf));
	if (!fl->nodes || !fl->leaf)
		goto fail;
	fl->cap_nodes = 1024;
	fl->nodes[fl->n_nodes++] = (struct flame_node){ FLAME_NONE, FLAME_NONE };
	for (size_t i = 0; i < p->n; i++)
		if ((fl->leaf[i] = add_stack(fl, &p->stacks[i], sym)) == FLAME_NONE)
			goto fail;
	return 0;
fail:
	flame_free(fl);
	errno = ENOMEM;
	return -1;
}

void flame_free(struct flame *fl)
{
	for (size_t i = 0; i < fl->n_frames; i++)
		free(fl->frames[i].name);
	free(fl->frames);
	free(fl->nodes);
	free(fl->leaf);
	free(fl->frame_ix);
	free(fl->node_ix);
	memset(fl, 0, sizeof(*fl));
}

void flame_sums(const struct flame *fl, const struct profile *p, const int64_t *vals, int64_t *out)
{
	memset(out, 0, fl->n_nodes * sizeof(*out));
	for (size_t i = 0; i < p->n; i++)
		out[fl->leaf[i]] += vals[i];
	/* Parents come before their children: one pass from the end adds every subtree up. */
	for (size_t i = fl->n_nodes; i-- > 1;)
		out[fl->nodes[i].parent] += out[i];
}

const char *flame_site(const struct flame_frame *f, char *buf, size_t len)
{
	if (f->file)
		snprintf(buf, len, "%s:%d", f->file, f->line);
	else if (f->module)
		snprintf(buf, len, "(%s)", f->module);
	else
		buf[0] = '\0';
	return buf;
}

/* The length of a valid UTF-8 sequence at s, 0 if none starts there (overlongs and surrogates too). */
static int utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
			return 0;
		return 4;
	}
	return 0;
}

void flame_put_text(FILE *f, const char *s, int (*esc)(FILE *f, unsigned char c))
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");

	while (*u) {
		int n = utf8_len(u);
		if (n == 1 && (*u < 0x20 || *u == 0x7f))
			n = 0;
		if (!n) {
			fputc('?', f);
			u++;
		} else if (n == 1) {
			if (!esc(f, *u))
				fputc(*u, f);
			u++;
		} else {
			fwrite(u, 1, n, f);
			u += n;
		}
	}
}
