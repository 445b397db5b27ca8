/*
 * The program the golden profiles in tests/golden/ were "taken" from:
 * never run, only symbolized.  Built once by tests/golden/inputs.sh into
 * tests/golden/app, which is checked in so that its addresses, names and
 * lines stay those of the profiles whatever the compiler.  Freestanding:
 * no libc, so nothing in it changes with the system's.
 */
#define NOINLINE __attribute__((noinline))
#define INLINE static inline __attribute__((always_inline))

static char pool[1 << 16];
static unsigned long used;
static volatile void *sink;

/* The allocator the stacks start from (its own frame is not in them). */
NOINLINE void *xmalloc(unsigned long n)
{
	void *p = pool + (used % sizeof(pool));
	used += n;
	return p;
}

/* Inlined into parse_request: a frame of its own only in the line tables. */
INLINE void *parse_field(unsigned long n)
{
	return xmalloc(n * 2 + 1);
}

NOINLINE void *parse_request(unsigned long n)
{
	sink = parse_field(n);
	return xmalloc(512);
}

NOINLINE void cache_put(unsigned long key)
{
	sink = xmalloc(24);
	sink = xmalloc(1300 + key % 7);
}

NOINLINE void render(unsigned long n)
{
	sink = xmalloc(4096 * n);
}

NOINLINE void handle(unsigned long i)
{
	sink = parse_request(i);
	cache_put(i);
	render(i & 3);
}

void _start(void)
{
	for (unsigned long i = 0;; i++)
		handle(i);
}
