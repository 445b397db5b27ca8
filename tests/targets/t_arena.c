/*
 * The arena of the classic "roll your own memory profiling" article:
 *
 *   a(n): allocates n ints from the arena, then calls b(n)
 *   b(n): allocates n ints from the arena
 *   main: a(2Mi); a(2Mi); b(3Mi);  nothing is freed
 *
 * through a custom allocator implemented here,
 *
 *   void *arena_alloc(arena_t *a, size_t size, size_t align, size_t count)
 *
 * (size = element size, count = number of elements), traced with
 * --sym 'arena_alloc:size=arg2*arg4,objects=arg4,arena=arg1'.
 *
 * Per stack (bytes = 4 x ints, objects = ints):
 *   main;a;b   2 x 2Mi ints = 4Mi objects, 16 MiB (16777216)
 *   main;a     2 x 2Mi ints = 4Mi objects, 16 MiB (16777216)
 *   main;b     1 x 3Mi ints = 3Mi objects, 12 MiB (12582912)
 * Totals: 11Mi objects (11534336), 44 MiB (46137344), all in use.
 *
 * arena_alloc gets its memory from malloc'd chunks of 16 MiB (3 chunks
 * here: a+b, a+b, b), so when libc is probed as well the chunk mallocs are
 * calls nested inside arena_alloc and must not be counted.  The only other
 * malloc is the arena itself: arena_new, malloc(32), 1 object in use.
 * No stdio, so nothing else allocates.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

#define MI (1024 * 1024)
#define CHUNK ((size_t)16 * MI)

struct chunk {
	struct chunk *next;
	size_t cap;
	unsigned char data[];
};

typedef struct arena {
	unsigned char *cur, *end;     /* free space in the current chunk */
	struct chunk *first, *current;
} arena_t;

_Static_assert(sizeof(arena_t) == 32, "tests/run.sh expects a 32-byte arena_t");
_Static_assert(sizeof(struct chunk) == 16, "chunk data stays 16-byte aligned");

arena_t *volatile arena;
int *volatile sink;

static void use_chunk(arena_t *a, struct chunk *c)
{
	a->current = c;
	a->cur = c->data;
	a->end = c->data + c->cap;
}

/* count elements of size bytes, aligned to align (a power of two). */
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
		/* A new chunk: a malloc nested inside arena_alloc. */
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

/* The arena itself: malloc(32), kept. */
NOINLINE arena_t *arena_new(void)
{
	arena_t *a = malloc(sizeof(*a));
	if (a)
		a->cur = a->end = NULL, a->first = a->current = NULL;
	return a;
}

NOINLINE void b(size_t n)
{
	int *p = arena_alloc(arena, sizeof(int), alignof(int), n);
	if (!p)
		exit(2);
	p[0] = p[n - 1] = 2;
	sink = p;
}

NOINLINE void a(size_t n)
{
	int *p = arena_alloc(arena, sizeof(int), alignof(int), n);
	if (!p)
		exit(2);
	p[0] = p[n - 1] = 1;
	sink = p;
	b(n);
}

int main(void)
{
	arena = arena_new();
	if (!arena)
		return 1;
	a(2 * MI);
	a(2 * MI);
	b(3 * MI);
	return 0;
}
