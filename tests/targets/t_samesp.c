/*
 * The stub's memo of each thread's last walk (stub/unwind.c, struct
 * stub_memo) against stacks that differ only above the call (scenario
 * stubwalk).  malloc is called from one return address in leaf(), at one
 * stack pointer (and, with frame pointers, one frame pointer), under
 * callers whose frames are alike, in turn: every walk starts from the same
 * registers, and only the words above tell the stacks apart.
 *   main -> near_a -> leaf                ROUNDS x 100 bytes
 *   main -> near_b -> leaf                ROUNDS x 200   (differ at leaf's return address)
 *   main -> far_a -> mid1 -> mid2 -> leaf ROUNDS x 300
 *   main -> far_b -> mid1 -> mid2 -> leaf ROUNDS x 400   (differ three frames above leaf)
 * in the order a, b, b, a (a walk like the last, then one that differs).
 * Every block is kept (in use at the end).  Each caller
 * counts its calls in a global of its own, after the call: no tail call,
 * and no two functions the same code (which -O2 would fold into one).
 * Built with frame pointers and without (nofp/).
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))
#define ROUNDS 200

void *volatile blocks[4 * ROUNDS];
static int n_blocks;
volatile int near_a_calls, near_b_calls, far_a_calls, far_b_calls, mid_calls;

NOINLINE void leaf(size_t size)
{
	blocks[n_blocks++] = malloc(size);
}

NOINLINE void near_a(size_t size)
{
	leaf(size);
	near_a_calls++;
}

NOINLINE void near_b(size_t size)
{
	leaf(size);
	near_b_calls++;
}

NOINLINE void mid2(size_t size)
{
	leaf(size);
	mid_calls++;
}

NOINLINE void mid1(size_t size)
{
	mid2(size);
	mid_calls++;
}

NOINLINE void far_a(size_t size)
{
	mid1(size);
	far_a_calls++;
}

NOINLINE void far_b(size_t size)
{
	mid1(size);
	far_b_calls++;
}

int main(void)
{
	/* a, b, b, a: a walk like the last (the memo's check passes) and one that differs (it fails), in turn. */
	for (int i = 0; i < ROUNDS / 2; i++) {
		near_a(100);
		near_b(200);
		near_b(200);
		near_a(100);
		far_a(300);
		far_b(400);
		far_b(400);
		far_a(300);
	}
	return near_a_calls == ROUNDS && near_b_calls == ROUNDS && far_a_calls == ROUNDS && far_b_calls == ROUNDS ? 0 : 1;
}
