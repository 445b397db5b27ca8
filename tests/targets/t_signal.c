/*
 * Allocates known amounts, then dies from a signal: SIGKILL by default
 * (raise), or SIGSEGV (a write through a null pointer) with argument "segv".
 * Core dumps are disabled first.
 *   sig_keep:  2 x 1111, kept
 *   sig_freed: 1 x 222, freed by sig_release
 * tests/run.sh holds the expected numbers.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define NOINLINE __attribute__((noinline))

void *volatile keep[2];
void *volatile tmp;
int *volatile null_ptr;

NOINLINE void sig_keep(void)
{
	for (int i = 0; i < 2; i++)
		keep[i] = malloc(1111);
}

NOINLINE void sig_freed(void)
{
	tmp = malloc(222);
}

NOINLINE void sig_release(void)
{
	free(tmp);
}

int main(int argc, char **argv)
{
	struct rlimit no_core = { 0, 0 };

	setrlimit(RLIMIT_CORE, &no_core);
	sig_keep();
	sig_freed();
	sig_release();
	if (argc > 1 && strcmp(argv[1], "segv") == 0) {
		signal(SIGSEGV, SIG_DFL);
		*null_ptr = 1;
	}
	raise(SIGKILL);
	return 0;
}
