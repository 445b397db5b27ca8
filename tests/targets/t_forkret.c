/*
 * Which calls of an allocator take a return probe, seen from inside: a
 * uretprobe replaces the return address on the stack with the kernel's
 * trampoline (in the [uprobes] page), so a function whose return address
 * lies outside this program's text was given a return probe.  fr_alloc
 * hands out blocks of a static arena (no malloc: nothing else is probed);
 * fr_free gives them back.
 *   t_forkret N SIZE [K]: K children (default 1) are forked one after
 *   another, each makes N calls fr_alloc(SIZE) (each block freed at once)
 *   while the parent waits, then says "child calls N returns M"; then the
 *   parent does the same ("parent calls N returns M").  Every process's
 *   allocations are known: N blocks of SIZE, all freed.
 * Use: heaptrace --no-libc --sym fr_alloc --free-sym fr_free ...
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

extern char __executable_start[], etext[];
static char arena[1 << 16];
static long returns;

NOINLINE void *fr_alloc(size_t n)
{
	char *ra = __builtin_return_address(0);

	if (ra < __executable_start || ra >= etext)
		returns++;
	return arena + (n & 0xfff);
}

NOINLINE void fr_free(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static void run(const char *who, long n, size_t size)
{
	char line[128];

	returns = 0;
	for (long i = 0; i < n; i++)
		fr_free(fr_alloc(size));
	snprintf(line, sizeof(line), "%s calls %ld returns %ld\n", who, n, returns);
	say(line);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 64;
	int k = argc > 3 ? atoi(argv[3]) : 1;

	for (int i = 0; i < k; i++) {
		pid_t c = fork();
		if (c < 0)
			return 1;
		if (!c) {
			run("child", n, size);
			_exit(0);
		}
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
			return 3;
	}
	run("parent", n, size);
	return 0;
}
