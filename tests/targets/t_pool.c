/*
 * A pool allocator with per-object free, and a malloc-shaped wrapper over it:
 *
 *   void *pool_alloc(pool_t *pool, size_t size)   a 256-byte slot (size <= 256)
 *   void  pool_free(pool_t *pool, void *ptr)      the slot back on the free list
 *   void *slab_alloc(size_t size)                 pool_alloc(the_pool, size)
 *   void  slab_free(void *ptr)                    pool_free(the_pool, ptr)
 *
 * Slots come from one malloc'd slab of 64 slots, allocated inside pool_alloc
 * (a malloc nested in pool_alloc); freed slots are reused first, so addresses
 * come back.  The pool itself is pool_new's malloc(32).
 *
 * Sites (size = pool_alloc's arg2, or slab_alloc's arg1):
 *   pool_keep:    5 x pool_alloc(100), kept           alloc 5/500, in use 5/500
 *   pool_churn:  10 x pool_alloc(40), each freed at once by pool_churn
 *                                                      alloc 10/400, in use 0/0
 *   pool_some:    4 x pool_alloc(64); pool_release frees 3 of them
 *                                                      alloc 4/256, in use 1/64
 *   slab_keep:    3 x slab_alloc(24), kept            alloc 3/72,  in use 3/72
 *   slab_churn:   2 x slab_alloc(200), each freed at once with slab_free
 *                                                      alloc 2/400, in use 0/0
 * pool_release and slab_free only free.  No stdio, so nothing else allocates.
 */
#include <stddef.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

#define SLOT 256
#define NSLOTS 64

struct slot {
	struct slot *next;
};

typedef struct pool {
	unsigned char *slab;  /* current slab */
	size_t next;          /* its first unused slot */
	struct slot *free;    /* freed slots */
	size_t nslabs;
} pool_t;

_Static_assert(sizeof(pool_t) == 32, "tests/run.sh expects a 32-byte pool_t");

pool_t *volatile the_pool;
void *volatile keep[5];
void *volatile some[4];
void *volatile skeep[3];
void *volatile tmp;

NOINLINE void *pool_alloc(pool_t *pool, size_t size)
{
	if (size > SLOT)
		return NULL;
	if (pool->free) {
		struct slot *s = pool->free;
		pool->free = s->next;
		return s;
	}
	if (!pool->slab || pool->next == NSLOTS) {
		/* A malloc nested inside pool_alloc. */
		pool->slab = malloc((size_t)SLOT * NSLOTS);
		if (!pool->slab)
			return NULL;
		pool->next = 0;
		pool->nslabs++;
	}
	return pool->slab + SLOT * pool->next++;
}

NOINLINE void pool_free(pool_t *pool, void *ptr)
{
	struct slot *s = ptr;

	if (!s)
		return;
	s->next = pool->free;
	pool->free = s;
}

NOINLINE void *slab_alloc(size_t size)
{
	return pool_alloc(the_pool, size);
}

NOINLINE void slab_free(void *ptr)
{
	pool_free(the_pool, ptr);
}

NOINLINE pool_t *pool_new(void)
{
	pool_t *p = malloc(sizeof(*p));
	if (p) {
		p->slab = NULL;
		p->next = 0;
		p->free = NULL;
		p->nslabs = 0;
	}
	return p;
}

NOINLINE void pool_keep(void)
{
	for (int i = 0; i < 5; i++)
		keep[i] = pool_alloc(the_pool, 100);
}

NOINLINE void pool_churn(void)
{
	for (int i = 0; i < 10; i++) {
		tmp = pool_alloc(the_pool, 40);
		pool_free(the_pool, tmp);
	}
}

NOINLINE void pool_some(void)
{
	for (int i = 0; i < 4; i++)
		some[i] = pool_alloc(the_pool, 64);
}

NOINLINE void pool_release(void)
{
	for (int i = 0; i < 3; i++)
		pool_free(the_pool, some[i]);
}

NOINLINE void slab_keep(void)
{
	for (int i = 0; i < 3; i++)
		skeep[i] = slab_alloc(24);
}

NOINLINE void slab_churn(void)
{
	for (int i = 0; i < 2; i++) {
		tmp = slab_alloc(200);
		slab_free(tmp);
	}
}

int main(void)
{
	the_pool = pool_new();
	if (!the_pool)
		return 1;
	pool_keep();
	pool_churn();
	pool_some();
	pool_release();
	slab_keep();
	slab_churn();
	for (int i = 0; i < 5; i++)
		if (!keep[i])
			return 1;
	/* One slab was enough: every freed slot was reused. */
	return the_pool->nslabs == 1 ? 0 : 1;
}
