/*
 * Target for scenario_stale: the pattern that hid PostgreSQL's palloc calls
 * from the sampler (issue 20, item 3).  ctx_alloc is a custom allocator
 * (--sym 'ctx_alloc:size=arg2').  Each of ROUNDS rounds:
 *   small_site  ctx_alloc(ctx, 0): never sampled, so with uprobe sessions
 *               its return is not needed
 *   deep        a frame with a large array it never writes, over the stack
 *               slot where small_site's call left its return address; from
 *               below it big_site calls ctx_alloc(ctx, 1 << 40), which any
 *               --sample-rate samples (probability 1 - exp(-2^40 / rate)).
 * A tracer that took "the return address of the last skipped call is still
 * in its slot" for "that call is still running" would count big_site's
 * calls as nested in small_site's, and drop them.  Every block stays live
 * (distinct addresses).  Exact profile, by innermost frame:
 *   small_site  ROUNDS objects, 0 bytes
 *   big_site    ROUNDS objects, ROUNDS << 40 bytes
 */
#include <stddef.h>
#include <stdint.h>

#define NOINLINE __attribute__((noinline))
#define ROUNDS 1000

static char pool[2 * ROUNDS * 16];
static size_t used;
void *volatile sink;
int ctx;

NOINLINE void *ctx_alloc(void *c, size_t size)
{
	(void)c;
	(void)size;
	__asm__ volatile("" ::: "memory");
	return pool + 16 * used++;
}

NOINLINE void small_site(void)
{
	volatile char pad[256];

	pad[0] = 0;
	sink = ctx_alloc(&ctx, 0);
}

NOINLINE void big_site(void)
{
	sink = ctx_alloc(&ctx, (size_t)1 << 40);
}

NOINLINE void deep(void)
{
	volatile char hole[1024];

	hole[1023] = 0;
	big_site();
}

int main(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		small_site();
		deep();
	}
	return 0;
}
