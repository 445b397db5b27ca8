/*
 * A PostgreSQL-shaped memory-context allocator (issue 20, item 5):
 *
 *   void *ctx_alloc(ctx_t *c, size_t size)   MemoryContextAlloc
 *   void *pal(size_t size)                   palloc: in CurrentMemoryContext, a global
 *   void *repal(void *p, size_t size)        repalloc: a new block in p's context, p freed
 *   void  pf(void *p)                        pfree
 *   void  ctx_reset(ctx_t *c)                MemoryContextReset: frees every block of c
 *   static void *set_alloc(ctx_t *c, size_t size)
 *                                            AllocSetAlloc: static, does the work
 *
 * Every block has a 16-byte header {next, ctx} in front of it, so a
 * block's context is the 8 bytes before it, *(ptr-8), as in PostgreSQL.
 * Blocks are malloc'd inside set_alloc (nested calls when libc is traced
 * too) and freed with free inside pf or ctx_reset.  Two contexts, the
 * globals top and tmp, so the contexts themselves are not malloc'd.
 *
 * In order (size = the requested bytes; 1 object each):
 *   top_keep:    3 x pal(100) in top, kept               3 / 300
 *   tmp_keep:    Current = tmp; 4 x pal(50), kept        4 / 200
 *   direct_keep: 2 x ctx_alloc(&top, 30), kept           2 / 60
 *   churn:       5 x pal(40) in tmp, each pf'd at once   5 / 200, none kept
 *   seed_tmp:    pal(10) in tmp                          1 / 10, repal'd
 *   seed_top:    ctx_alloc(&top, 20)                     1 / 20, repal'd
 *   grow:        repal(seed_tmp's, 1000) in tmp and
 *                repal(seed_top's, 2000) in top, kept    2 / 3000
 * With the argument "reset" ("resettop"):
 *   main:        ctx_reset(&tmp): frees tmp_keep's 4 and grow's 1000-byte
 *                block (5 blocks, 1200 bytes); (ctx_reset(&top): frees
 *                top_keep's 3, direct_keep's 2 and grow's 2000-byte block,
 *                6 blocks, 2360 bytes)
 *   tmp_after:   2 x pal(70) in tmp, kept                2 / 140
 * Allocated 18 (20 with a reset) blocks, 3790 (3930) bytes; per context
 * before any reset: top 3/300 + 2/60 + 1/2000 = 6 blocks / 2360 bytes,
 * tmp 4/200 + 1/1000 = 5 / 1200.  In use at exit 11 blocks, 3560 bytes;
 * with reset 2360 + 140 = 8 blocks, 2500 bytes; with resettop 1200 + 140
 * = 7 blocks, 1340 bytes.
 * No stdio, so nothing else allocates.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

typedef struct ctx {
	struct hdr *blocks;     /* live blocks, for ctx_reset */
	size_t n;
} ctx_t;

struct hdr {
	struct hdr *next;       /* in its context's list */
	ctx_t *ctx;             /* *(block - 8) */
};

_Static_assert(sizeof(struct hdr) == 16, "the context must be the 8 bytes before a block");

ctx_t top, tmp;
ctx_t *volatile CurrentMemoryContext = &top;
void *volatile keep[16];
void *volatile tmp_ptr;

/*
 * Static, and noipa: no clone (set_alloc.constprop.0) and no inlining, so
 * its one symbol is in .symtab and the separate debug info only.
 */
static __attribute__((noipa)) void *set_alloc(ctx_t *c, size_t size)
{
	struct hdr *h = malloc(sizeof(*h) + size);

	if (!h)
		return NULL;
	h->ctx = c;
	h->next = c->blocks;
	c->blocks = h;
	c->n++;
	return h + 1;
}

NOINLINE void *ctx_alloc(ctx_t *c, size_t size)
{
	return set_alloc(c, size);
}

NOINLINE void *pal(size_t size)
{
	return set_alloc(CurrentMemoryContext, size);
}

static void unlink_block(struct hdr *h)
{
	for (struct hdr **p = &h->ctx->blocks; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			h->ctx->n--;
			return;
		}
}

NOINLINE void pf(void *p)
{
	struct hdr *h = (struct hdr *)p - 1;

	unlink_block(h);
	free(h);
}

NOINLINE void *repal(void *p, size_t size)
{
	ctx_t *c = ((struct hdr *)p - 1)->ctx;
	void *n = set_alloc(c, size);

	if (!n)
		return NULL;
	memcpy(n, p, 1);
	pf(p);
	return n;
}

NOINLINE void ctx_reset(ctx_t *c)
{
	while (c->blocks) {
		struct hdr *h = c->blocks;
		c->blocks = h->next;
		free(h);
	}
	c->n = 0;
}

NOINLINE void top_keep(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = pal(100);
}

NOINLINE void tmp_keep(void)
{
	for (int i = 0; i < 4; i++)
		keep[3 + i] = pal(50);
}

NOINLINE void direct_keep(void)
{
	for (int i = 0; i < 2; i++)
		keep[7 + i] = ctx_alloc(&top, 30);
}

NOINLINE void churn(void)
{
	for (int i = 0; i < 5; i++) {
		tmp_ptr = pal(40);
		pf(tmp_ptr);
	}
}

NOINLINE void *seed_tmp(void)
{
	return pal(10);
}

NOINLINE void *seed_top(void)
{
	return ctx_alloc(&top, 20);
}

NOINLINE void grow(void *a, void *b)
{
	keep[9] = repal(a, 1000);
	keep[10] = repal(b, 2000);
}

NOINLINE void tmp_after(void)
{
	for (int i = 0; i < 2; i++)
		keep[11 + i] = pal(70);
}

int main(int argc, char **argv)
{
	top_keep();
	CurrentMemoryContext = &tmp;
	tmp_keep();
	direct_keep();
	churn();
	void *a = seed_tmp(), *b = seed_top();
	if (!a || !b)
		return 1;
	grow(a, b);
	bool reset = argc > 1 && !strcmp(argv[1], "reset"), reset_top = argc > 1 && !strcmp(argv[1], "resettop");
	if (reset || reset_top) {
		ctx_reset(reset ? &tmp : &top);
		tmp_after();
	}
	/* The contexts hold what the header says. */
	return top.n == (reset_top ? 0u : 6u) && tmp.n == (reset ? 2u : reset_top ? 7u : 5u) ? 0 : 2;
}
