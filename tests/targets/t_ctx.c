/*
 * A PostgreSQL-style memory-context allocator: contexts with children,
 * blocks carved from the context's chunks, a per-block free that only
 * forgets the block, a reset that frees every block of a context at once,
 * and a delete that deletes the children, then the context:
 *
 *   ctx_t *ctx_create(ctx_t *parent)
 *   void  *ctx_alloc(ctx_t *c, size_t size)
 *   void   ctx_free(void *p)
 *   void   ctx_reset(ctx_t *c)          every block of c is gone
 *   void   ctx_delete(ctx_t *c)         ctx_delete of each child, then c's
 *                                       blocks are gone and c is freed
 *
 * traced with --no-libc --sym 'ctx_alloc:size=arg2,arena=arg1'
 *   --free-sym 'ctx_free:ptr=arg1' --reset-sym 'ctx_reset:arena=arg1'
 *   --reset-sym 'ctx_delete:arena=arg1'.
 *
 * In order (one object a block):
 *   keep_many:   40 contexts, 100 x ctx_alloc(16) each, kept
 *                                     4000 blocks, 64000 bytes in use
 *   empty_resets: 1000 x ctx_reset(E) of an empty context, among those
 *                4000 live blocks     1000 resets, nothing freed
 *   nest_parent: 10 x ctx_alloc(P, 32)            10 blocks,  320 bytes
 *   nest_child:  20 x ctx_alloc(C1, 8), 5 x ctx_alloc(C2, 64) (C1 and C2
 *                children of P)                   25 blocks,  480 bytes
 *   nest_delete: ctx_delete(P): ctx_delete(C1), ctx_delete(C2), then P's
 *                own                 3 resets, 35 blocks freed, 0 in use;
 *                the chunks go to a free list (C1's, C2's, P's: P's on top)
 *                that new contexts take their chunks from, as PostgreSQL's
 *                context free lists: T gets P's chunk, R gets C2's
 *   tuple_alloc: 200 rounds of 3 x ctx_alloc(T, 24), ctx_free of the
 *                second, ctx_reset(T)
 *                                     600 blocks, 14400 bytes allocated;
 *                                     200 frees, 400 freed by 200 resets
 *   refill_one:  5 x ctx_alloc(R, 40), then ctx_reset(R)
 *                                       5 blocks,  200 bytes; 0 in use
 *   refill_two:  3 x ctx_alloc(R, 40) at the addresses the reset freed
 *                (the program checks it): 3 blocks, 120 bytes in use
 * Totals: allocs = 4000 + 35 + 600 + 5 + 3 = 4643; frees = 200;
 * arena_resets = 1000 + 3 + 200 + 1 = 1204; reset_frees = 35 + 400 + 5 = 440;
 * in use 4003 blocks, 64120 bytes.  Contexts and chunks come from malloc,
 * which --no-libc leaves alone.  No stdio.
 *
 * t_ctx many N: N contexts (in 16-context slabs, so malloc holds no more
 * than it must) get one block of 8 bytes each from many_alloc, then each
 * is reset: heaptrace's arena maps hold 65,536 arenas, so the blocks of
 * the last N - 65,536 cannot join theirs (arena_map_full, once at the
 * allocation and once at the reset) and stay in use, counted.
 *
 * t_ctx stray: ctx_free of blocks never allocated, 3 from stray_free and
 * 1 from stray_other, after one block allocated and freed (keep_one): 4
 * unmatched frees from 2 stacks.
 *
 * Without ctx_delete traced, the deleted blocks stay live and 2 addresses
 * come back: T's first block (offset 0 of P's chunk) is P's first block
 * (nest_parent), R's first (offset 0 of C2's chunk) is C2's first
 * (nest_child); no other offsets meet (T: 0, 24, 48 against P's multiples
 * of 32 below 320; R: multiples of 40 below 200 against C2's of 64).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

#define CHUNK ((size_t)4096)
#define MAX_CHILDREN 4

struct chunk {
	struct chunk *next;
	size_t pad;
	unsigned char data[];
};

typedef struct ctx {
	struct ctx *parent, *children[MAX_CHILDREN];
	int nchildren;
	struct chunk *first, *current;
	unsigned char *cur, *end;
} ctx_t;

void *volatile sink;
static struct chunk *free_chunks;     /* chunks of deleted contexts, newest first */

NOINLINE ctx_t *ctx_create(ctx_t *parent)
{
	ctx_t *c = calloc(1, sizeof(*c));

	if (!c)
		exit(2);
	c->parent = parent;
	if (parent && parent->nchildren < MAX_CHILDREN)
		parent->children[parent->nchildren++] = c;
	return c;
}

static void use_chunk(ctx_t *c, struct chunk *k)
{
	c->current = k;
	c->cur = k->data;
	c->end = k->data + CHUNK;
}

NOINLINE void *ctx_alloc(ctx_t *c, size_t size)
{
	size = (size + 7) & ~(size_t)7;
	for (;;) {
		if (c->current && c->cur + size <= c->end) {
			void *p = c->cur;
			c->cur += size;
			return p;
		}
		if (c->current && c->current->next) {
			use_chunk(c, c->current->next);
			continue;
		}
		struct chunk *k = free_chunks;
		if (k)
			free_chunks = k->next;
		else if (!(k = malloc(sizeof(*k) + CHUNK)))
			exit(2);
		k->next = NULL;
		if (c->current)
			c->current->next = k;
		else
			c->first = k;
		use_chunk(c, k);
	}
}

/* Forgets the block: its memory comes back at the next reset. */
NOINLINE void ctx_free(void *p)
{
	sink = p;
}

NOINLINE void ctx_reset(ctx_t *c)
{
	if (c->first)
		use_chunk(c, c->first);
}

NOINLINE void ctx_delete(ctx_t *c)
{
	for (int i = 0; i < c->nchildren; i++)
		ctx_delete(c->children[i]);
	for (struct chunk *k = c->first, *n; k; k = n) {
		n = k->next;
		k->next = free_chunks;
		free_chunks = k;
	}
	free(c);
}

static ctx_t *many[40];

NOINLINE void keep_many(void)
{
	for (int i = 0; i < 40; i++) {
		many[i] = ctx_create(NULL);
		for (int j = 0; j < 100; j++)
			sink = ctx_alloc(many[i], 16);
	}
}

NOINLINE void empty_resets(void)
{
	ctx_t *e = ctx_create(NULL);

	for (int i = 0; i < 1000; i++)
		ctx_reset(e);
}

NOINLINE void nest_parent(ctx_t *p)
{
	for (int i = 0; i < 10; i++)
		sink = ctx_alloc(p, 32);
}

NOINLINE void nest_child(ctx_t *c1, ctx_t *c2)
{
	for (int i = 0; i < 20; i++)
		sink = ctx_alloc(c1, 8);
	for (int i = 0; i < 5; i++)
		sink = ctx_alloc(c2, 64);
}

NOINLINE void nest_delete(ctx_t *p)
{
	ctx_delete(p);
}

NOINLINE void tuple_alloc(ctx_t *t)
{
	void *a = ctx_alloc(t, 24), *b = ctx_alloc(t, 24), *c = ctx_alloc(t, 24);

	ctx_free(b);
	sink = a;
	sink = c;
}

NOINLINE void refill_one(ctx_t *r, void **out)
{
	for (int i = 0; i < 5; i++)
		out[i] = ctx_alloc(r, 40);
}

NOINLINE void refill_two(ctx_t *r, void **out)
{
	for (int i = 0; i < 3; i++)
		out[i] = ctx_alloc(r, 40);
}

NOINLINE void many_alloc(ctx_t *c)
{
	sink = ctx_alloc(c, 8);
}

/* No chunk per context: a context's one block is carved from a shared slab. */
static int many_contexts(long n)
{
	ctx_t *all = calloc(n, sizeof(*all));
	unsigned char *slab = malloc(n * 8);

	if (!all || !slab)
		return 2;
	for (long i = 0; i < n; i++) {
		all[i].cur = slab + i * 8;
		all[i].end = all[i].cur + 8;
		all[i].current = (struct chunk *)slab;   /* non-null: the block fits without a chunk */
		many_alloc(&all[i]);
	}
	for (long i = 0; i < n; i++)
		ctx_reset(&all[i]);
	return 0;
}

static long strays[4];

NOINLINE void stray_free(void)
{
	for (int i = 0; i < 3; i++)
		ctx_free(&strays[i]);
}

NOINLINE void stray_other(void)
{
	ctx_free(&strays[3]);
}

NOINLINE void keep_one(ctx_t *c)
{
	ctx_free(ctx_alloc(c, 16));
}

int main(int argc, char **argv)
{
	if (argc == 2 && argv[1][0] == 's') {
		keep_one(ctx_create(NULL));
		stray_free();
		stray_other();
		return 0;
	}
	if (argc == 3 && argv[1][0] == 'm')
		return many_contexts(strtol(argv[2], NULL, 10));
	keep_many();
	empty_resets();

	ctx_t *p = ctx_create(NULL), *c1 = ctx_create(p), *c2 = ctx_create(p);
	nest_parent(p);
	nest_child(c1, c2);
	nest_delete(p);

	ctx_t *t = ctx_create(NULL);
	for (int i = 0; i < 200; i++) {
		tuple_alloc(t);
		ctx_reset(t);
	}

	ctx_t *r = ctx_create(NULL);
	void *one[5], *two[3];
	refill_one(r, one);
	ctx_reset(r);
	refill_two(r, two);
	/* The reset really handed the same addresses out again. */
	for (int i = 0; i < 3; i++)
		if (two[i] != one[i])
			return 3;
	return 0;
}
