/*
 * Targets for scenario_limits: full maps (tests/run.sh holds the expected
 * numbers).  Single-threaded, no stdio: every heap block is one of these.
 *
 *   t_limits live
 *       lim_keep:    100 x malloc(100), all live at once
 *       lim_release: frees the 100
 *       lim_again:   30 x malloc(300), kept (the map has room again)
 *
 *   t_limits stacks
 *       st_1 ... st_10, called in that order from main, each its own call
 *       stack: st_K does K x malloc(100 * K), kept; 55 allocations,
 *       100 x (1 + 4 + 9 + ... + 100) = 38500 bytes.
 *
 *   t_limits many N FIFO
 *       says "start", waits for a line on FIFO; lim_many: N x malloc(16),
 *       all live, as fast as it can; says "held", waits for a line; frees
 *       them (lim_many_free) and exits.  The live map's growth, and what a
 *       block costs in kernel memory.
 */
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

void *volatile blocks[130];
int nblocks;

NOINLINE void lim_keep(void)
{
	for (int i = 0; i < 100; i++)
		blocks[i] = malloc(100);
}

NOINLINE void lim_release(void)
{
	for (int i = 0; i < 100; i++)
		free(blocks[i]);
}

NOINLINE void lim_again(void)
{
	for (int i = 0; i < 30; i++)
		blocks[100 + i] = malloc(300);
}

#define ST(k)                                              \
	NOINLINE void st_##k(void)                          \
	{                                                   \
		for (int i = 0; i < k; i++)                 \
			blocks[nblocks++] = malloc(100 * k); \
	}
ST(1) ST(2) ST(3) ST(4) ST(5) ST(6) ST(7) ST(8) ST(9) ST(10)

NOINLINE void lim_many(void **v, long n)
{
	for (long i = 0; i < n; i++)
		v[i] = malloc(16);
}

NOINLINE void lim_many_free(void **v, long n)
{
	for (long i = 0; i < n; i++)
		free(v[i]);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "many") == 0) {
		long n = atol(argv[2]);
		/* The array is not the heap's: an mmap of its own, no malloc to count. */
		void **v = n > 0 ? mmap(NULL, n * sizeof(*v), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
					-1, 0) : MAP_FAILED;
		if (v == MAP_FAILED)
			return 2;
		say("start\n");
		wait_line(argv[3]);
		lim_many(v, n);
		say("held\n");
		wait_line(argv[3]);
		lim_many_free(v, n);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "live") == 0) {
		lim_keep();
		lim_release();
		lim_again();
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "stacks") == 0) {
		st_1();
		st_2();
		st_3();
		st_4();
		st_5();
		st_6();
		st_7();
		st_8();
		st_9();
		st_10();
		return 0;
	}
	return 2;
}
