/*
 * Functions whose first instructions decide what a uprobe on them costs
 * (scenario probecost): each is traced with --free-sym (the probe reads
 * arg1, rdi) or --sym, and heaptrace must put its probe on the cheapest
 * instruction it may (user/probe/placement.c):
 *   pc_push       push rbx at the entry: the entry, emulated
 *   pc_load       mov rdi, [rdi-8] at the entry: the entry, single-stepped
 *                 (it cannot be skipped: it overwrites the argument)
 *   pc_pfree      PostgreSQL's pfree: mov rsi, rdi; mov rdi, [rdi-8]: the
 *                 entry, single-stepped: nothing cheaper before the load
 *   pc_skip       mov rax, rdi; push rbx: +3, the push, emulated
 *   pc_nop5       a 5-byte nop, then push rbx: the entry, optimized on 6.18+
 *   pc_nop4       a 4-byte nop, then push rbx: the entry, emulated on 6.18+
 *   pc_nop_nop5   nop; a 5-byte nop; push rbx: +1, optimized on 6.18+
 *   pc_alloc_nop5 a 5-byte nop, then a jump to malloc: an allocator probed at
 *                 an optimized site, entry and return
 * The functions are apart (aligned to 64 bytes, int3 between), so no
 * branch of one lands in another's first bytes.
 *
 *   t_probecost time N R   calls pc_skip, pc_load and pc_push N times, R
 *                          rounds, and prints "NAME NS" per function: the
 *                          fastest round's nanoseconds per call
 *   t_probecost alloc      alloc_site: 50 x pc_alloc_nop5(777), kept
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FN(n) ".globl " #n "\n.type " #n ", @function\n.p2align 6, 0xcc\n" #n ":\n"
#define END(n) ".size " #n ", .-" #n "\n"
#define NOP5 ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"

__asm__(".text\n"
	FN(pc_push)       "push %rbx\n pop %rbx\n ret\n" END(pc_push)
	FN(pc_load)       "mov -8(%rdi), %rdi\n ret\n" END(pc_load)
	FN(pc_pfree)      "mov %rdi, %rsi\n mov -8(%rdi), %rdi\n mov %rsi, %rax\n ret\n" END(pc_pfree)
	FN(pc_skip)       "mov %rdi, %rax\n push %rbx\n pop %rbx\n ret\n" END(pc_skip)
	FN(pc_nop5)       NOP5 "push %rbx\n pop %rbx\n ret\n" END(pc_nop5)
	FN(pc_nop4)       ".byte 0x0f, 0x1f, 0x40, 0x00\n push %rbx\n pop %rbx\n ret\n" END(pc_nop4)
	FN(pc_nop_nop5)   "nop\n" NOP5 "push %rbx\n pop %rbx\n ret\n" END(pc_nop_nop5)
	FN(pc_alloc_nop5) NOP5 "jmp malloc@PLT\n" END(pc_alloc_nop5)
	".p2align 6, 0xcc\n");

void pc_push(void *), pc_load(void *), pc_pfree(void *), pc_skip(void *), pc_nop5(void *), pc_nop4(void *),
	pc_nop_nop5(void *);
void *pc_alloc_nop5(size_t);

void *volatile keep[50];

__attribute__((noinline)) void alloc_site(void)
{
	for (int i = 0; i < 50; i++)
		keep[i] = pc_alloc_nop5(777);
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* The fastest of r rounds of n calls: the machine's noise only ever adds. */
static double per_call(void (*f)(void *), int n, int r)
{
	static long block[2];
	double best = 0;

	for (int k = 0; k < r; k++) {
		double t0 = now_ns();
		for (int i = 0; i < n; i++)
			f(&block[1]);
		double t = (now_ns() - t0) / n;
		if (!k || t < best)
			best = t;
	}
	return best;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "time")) {
		int n = atoi(argv[2]), r = atoi(argv[3]);

		printf("pc_skip %.0f\n", per_call(pc_skip, n, r));
		printf("pc_load %.0f\n", per_call(pc_load, n, r));
		printf("pc_push %.0f\n", per_call(pc_push, n, r));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "alloc")) {
		alloc_site();
		return 0;
	}
	/* Called once each, so the linker keeps them all. */
	static long block[2];
	pc_push(&block[1]);
	pc_load(&block[1]);
	pc_pfree(&block[1]);
	pc_skip(&block[1]);
	pc_nop5(&block[1]);
	pc_nop4(&block[1]);
	pc_nop_nop5(&block[1]);
	return 0;
}
