/*
 * The stub's own stack walk (stub/unwind.c) must never fault the process
 * (scenario stubwalk): allocations from every kind of stack and frame a
 * walk can meet, each block filled and checked before it is freed.  Exit 0
 * only if every check passed; a walk that faulted would kill it.
 *   rbp_alloc:   RBP_VALUES x 512 bytes on the main thread and on each
 *                thread, each call with %rbp holding garbage (below
 *                vm.mmap_min_addr, unmapped, the heap, the stack's top or
 *                bottom, a guard page, the thread pointer, the stack), in
 *                code without CFI
 *                (its frames unwind by frame pointer: that garbage)
 *   deep_alloc:  1 x 700 bytes under DEEP levels of main (frames of 256
 *                bytes: past the stack's first pages, which grows it),
 *                and 1 x 700 under THREAD_DEEP levels on each thread
 *   thread_alloc: THREADS x ROUNDS x 300, on threads of 64 KiB stacks
 *   sig_alloc:   2 x SIG_ALLOCS x 900 in a SIGUSR1 handler, on the
 *                thread's stack, then on an alternate signal stack
 *   co_alloc:    COROUTINES x CO_ROUNDS x 1100 on makecontext stacks
 *                (malloc'd and mmap'd), swapped in and out
 * Every block is freed: allocs = frees.  Built with frame pointers and
 * without (nofp/).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))
#define THREADS 4
#define ROUNDS 50
#define THREAD_DEEP 100
#define DEEP 2000
#define SIG_ALLOCS 10
#define COROUTINES 2
#define CO_ROUNDS 20
#define RBP_VALUES 7

static int failures;

/* rbp_alloc(garbage, size): malloc(size) with %rbp = garbage; no CFI, so its caller's frame is found through rbp. */
void *rbp_alloc(uint64_t garbage, size_t size);
__asm__(".text\n"
	".globl rbp_alloc\n"
	".type rbp_alloc, @function\n"
	"rbp_alloc:\n"
	"	push %rbp\n"
	"	mov %rdi, %rbp\n"
	"	mov %rsi, %rdi\n"
	"	call malloc@PLT\n"
	"	pop %rbp\n"
	"	ret\n"
	".size rbp_alloc, .-rbp_alloc\n");

static void check(void *p, size_t n, int c)
{
	unsigned char *b = p;

	if (!p) {
		failures++;
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)c) {
			failures++;
			break;
		}
	free(p);
}

static void *fill(void *p, size_t n, int c)
{
	if (p)
		memset(p, c, n);
	else
		failures++;
	return p;
}

/*
 * The garbage rbp values for a thread: edge is the last word of its stack
 * (the main thread's: nothing is mapped above) or a word at its bottom
 * (below the stack pointer: untouched), guard its guard page.  Every value
 * leads a frame-pointer walk to memory whose content does not depend on
 * the walk, so that the stub's and the BPF side's stacks can be compared.
 */
static void garbage_rbps(uint64_t edge, uint64_t guard)
{
	void *heap = malloc(64);
	uint64_t v[RBP_VALUES] = { 0x10, 0x7ffffffff000ull, (uint64_t)heap, edge, guard,
				   (uint64_t)pthread_self(), (uint64_t)&v };
	void *p[RBP_VALUES];

	for (int i = 0; i < RBP_VALUES; i++)
		p[i] = fill(rbp_alloc(v[i], 512), 512, 'r');
	for (int i = 0; i < RBP_VALUES; i++)
		check(p[i], 512, 'r');
	free(heap);
}

NOINLINE static int deep(int n, int levels)
{
	volatile char frame[256];

	frame[0] = (char)n;
	if (n == levels) {
		check(fill(malloc(700), 700, 'd'), 700, 'd');
		return frame[0];
	}
	return deep(n + 1, levels) + frame[0] - (char)n;
}

NOINLINE static void thread_alloc(int round)
{
	check(fill(malloc(300), 300, round), 300, round);
}

static void *worker(void *arg)
{
	pthread_attr_t a;
	void *lo;
	size_t size;

	(void)arg;
	if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size)) {
		failures++;
		return NULL;
	}
	pthread_attr_destroy(&a);
	for (int r = 0; r < ROUNDS; r++)
		thread_alloc(r);
	deep(0, THREAD_DEEP);
	garbage_rbps((uint64_t)lo + 64, (uint64_t)lo - 4096);
	return NULL;
}

static void *sig_blocks[SIG_ALLOCS];
static volatile int sig_n;

NOINLINE static void sig_alloc(void)
{
	sig_blocks[sig_n] = fill(malloc(900), 900, 's');
	sig_n++;
}

static void on_usr1(int sig)
{
	(void)sig;
	sig_alloc();
}

static void signals(int altstack)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = altstack ? SA_ONSTACK : 0 };
	static char alt[65536];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };

	if (altstack && sigaltstack(&ss, NULL))
		failures++;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (sig_n = 0; sig_n < SIG_ALLOCS;)
		raise(SIGUSR1);
	for (int i = 0; i < SIG_ALLOCS; i++)
		check(sig_blocks[i], 900, 's');
	if (altstack) {
		ss.ss_flags = SS_DISABLE;
		sigaltstack(&ss, NULL);
	}
}

static ucontext_t main_ctx, co_ctx[COROUTINES];

NOINLINE static void co_alloc(int k, int r)
{
	check(fill(malloc(1100), 1100, k + r), 1100, k + r);
}

static void co_body(int k)
{
	for (int r = 0; r < CO_ROUNDS; r++) {
		co_alloc(k, r);
		swapcontext(&co_ctx[k], &main_ctx);
	}
}

static void coroutines(void)
{
	size_t size = 128 * 1024;
	void *stacks[COROUTINES] = { malloc(size),
				     mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) };

	for (int k = 0; k < COROUTINES; k++) {
		if (!stacks[k] || stacks[k] == MAP_FAILED) {
			failures++;
			return;
		}
		getcontext(&co_ctx[k]);
		co_ctx[k].uc_stack.ss_sp = stacks[k];
		co_ctx[k].uc_stack.ss_size = size;
		co_ctx[k].uc_link = &main_ctx;
		makecontext(&co_ctx[k], (void (*)(void))co_body, 1, k);
	}
	for (int r = 0; r < CO_ROUNDS; r++)
		for (int k = 0; k < COROUTINES; k++)
			swapcontext(&main_ctx, &co_ctx[k]);
	free(stacks[0]);
	munmap(stacks[1], size);
}

/* The end of [stack], read without stdio (which would allocate). */
static uint64_t stack_top(void)
{
	static char maps[65536];
	int fd = open("/proc/self/maps", O_RDONLY);
	ssize_t n, len = 0;

	while (fd >= 0 && len < (ssize_t)sizeof(maps) - 1 && (n = read(fd, maps + len, sizeof(maps) - 1 - len)) > 0)
		len += n;
	if (fd >= 0)
		close(fd);
	maps[len] = '\0';
	for (char *line = maps, *end; *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			break;
		*end = '\0';
		if (strstr(line, "[stack]"))
			return strtoull(strchr(line, '-') + 1, NULL, 16);
	}
	failures++;
	return 0;
}

int main(void)
{
	pthread_t t[THREADS];
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], &a, worker, NULL))
			failures++;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	deep(0, DEEP);
	signals(0);
	signals(1);
	coroutines();

	garbage_rbps(stack_top() - 8, 0x7ffffffff000ull - 4096);
	/* On stderr: heaptrace writes its profile on stdout. */
	if (write(2, failures ? "failed\n" : "ok\n", failures ? 7 : 3) < 0)
		failures++;
	return failures ? 1 : 0;
}
