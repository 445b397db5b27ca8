/*
 * Two arenas (globals A and B, so the arenas themselves are not malloc'd),
 * allocations in each from distinct functions, then arena_reset(&A), then
 * new allocations in A at the addresses the reset released:
 *
 *   void *arena_alloc(arena_t *a, size_t size, size_t align, size_t count)
 *   void  arena_reset(arena_t *a)     every block of a is gone; a's chunks
 *                                     are kept and handed out again
 *
 * traced with --sym 'arena_alloc:size=arg2*arg4,objects=arg4,arena=arg1'
 *             --reset-sym 'arena_reset:arena=arg1'.
 *
 * In order (bytes = size x count, objects = count):
 *   ra_one:   3 x arena_alloc(&A, 8, 8, 100)   300 objects, 2400 bytes
 *             at A's chunk offsets 0, 800, 1600
 *   rb_keep:  4 x arena_alloc(&B, 4, 4, 50)    200 objects,  800 bytes
 *   ra_two:   2 x arena_alloc(&A, 16, 16, 10)   20 objects,  320 bytes
 *             at offsets 2400, 2560
 *   ab_shared (called by ab_loop from one call site, so one stack for both
 *             arenas): arena_alloc(&A, 2, 2, 25) and arena_alloc(&B, 2, 2, 25)
 *                                              50 objects,  100 bytes;
 *             A's block at offset 2720
 *   reset_a:  arena_reset(&A)                  frees ra_one's, ra_two's and
 *                                              ab_shared's A blocks (6 blocks,
 *                                              300 + 20 + 25 = 345 objects);
 *                                              ab_shared keeps B's 25 / 50
 *   ra_after: 6 x arena_alloc(&A, 8, 8, 100)   600 objects, 4800 bytes
 *             at offsets 0, 800, 1600, 2400 (the addresses of 4 blocks the
 *             reset freed), 3200, then 0 of a second chunk (A's first chunk
 *             holds 4096 bytes)
 * Chunks are malloc'd inside arena_alloc (nested calls when libc is probed
 * too).  The program checks the address reuse itself (exit 3 if not).
 * No stdio, so nothing else allocates.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

#define CHUNK ((size_t)4096)

struct chunk {
	struct chunk *next;
	size_t cap;
	unsigned char data[];
};

typedef struct arena {
	unsigned char *cur, *end;
	struct chunk *first, *current;
} arena_t;

_Static_assert(sizeof(struct chunk) == 16, "chunk data stays 16-byte aligned");

arena_t A, B;
void *volatile one[3], *volatile two[2], *volatile bkeep[4], *volatile after[6];
void *volatile shared[2];

static void use_chunk(arena_t *a, struct chunk *c)
{
	a->current = c;
	a->cur = c->data;
	a->end = c->data + c->cap;
}

NOINLINE void *arena_alloc(arena_t *a, size_t size, size_t align, size_t count)
{
	size_t bytes = size * count;

	for (;;) {
		if (a->current) {
			uintptr_t p = ((uintptr_t)a->cur + align - 1) & ~(uintptr_t)(align - 1);
			if (p + bytes <= (uintptr_t)a->end) {
				a->cur = (unsigned char *)(p + bytes);
				return (void *)p;
			}
			if (a->current->next) {
				use_chunk(a, a->current->next);
				continue;
			}
		}
		size_t cap = bytes + align > CHUNK ? bytes + align : CHUNK;
		struct chunk *c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = NULL;
		c->cap = cap;
		if (a->current)
			a->current->next = c;
		else
			a->first = c;
		use_chunk(a, c);
	}
}

/* Every block of a is released; its chunks are reused from the first. */
NOINLINE void arena_reset(arena_t *a)
{
	if (a->first)
		use_chunk(a, a->first);
}

NOINLINE void ra_one(void)
{
	for (int i = 0; i < 3; i++)
		one[i] = arena_alloc(&A, 8, 8, 100);
}

NOINLINE void rb_keep(void)
{
	for (int i = 0; i < 4; i++)
		bkeep[i] = arena_alloc(&B, 4, 4, 50);
}

NOINLINE void ra_two(void)
{
	for (int i = 0; i < 2; i++)
		two[i] = arena_alloc(&A, 16, 16, 10);
}

NOINLINE void *ab_shared(arena_t *x)
{
	return arena_alloc(x, 2, 2, 25);
}

/* One call site for both arenas: the same stack. */
NOINLINE void ab_loop(void)
{
	arena_t *both[2] = { &A, &B };

	for (int i = 0; i < 2; i++)
		shared[i] = ab_shared(both[i]);
}

NOINLINE void reset_a(void)
{
	arena_reset(&A);
}

NOINLINE void ra_after(void)
{
	for (int i = 0; i < 6; i++)
		after[i] = arena_alloc(&A, 8, 8, 100);
}

int main(void)
{
	ra_one();
	rb_keep();
	ra_two();
	ab_loop();
	reset_a();
	ra_after();
	for (int i = 0; i < 6; i++)
		if (!after[i])
			return 1;
	/* The reset really handed the same addresses out again. */
	if (after[0] != one[0] || after[1] != one[1] || after[2] != one[2] || after[3] != two[0])
		return 3;
	return 0;
}
