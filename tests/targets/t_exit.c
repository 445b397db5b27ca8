/*
 * Allocates known amounts, writes a marker line to standard output, then
 * leaves through exit(3) (default) or, with argument "_exit" or "-v",
 * through _exit(5), which skips the atexit handler.  ("-v" is also an
 * option of heaptrace: "heaptrace t_exit -v" must pass it to the command.)
 *   exit_keep:    5 x 2500, kept
 *   exit_freed:   2 x 700, freed by exit_release
 *   atexit_alloc: 1 x 1357, kept, allocated by an atexit handler (exit(3) only)
 * The marker is written with write(2), not stdio, so no stdio buffer is
 * allocated.  tests/run.sh holds the expected numbers.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

void *volatile keep[5];
void *volatile tmp[2];
void *volatile at_keep;

NOINLINE void exit_keep(void)
{
	for (int i = 0; i < 5; i++)
		keep[i] = malloc(2500);
}

NOINLINE void exit_freed(void)
{
	for (int i = 0; i < 2; i++)
		tmp[i] = malloc(700);
}

NOINLINE void exit_release(void)
{
	for (int i = 0; i < 2; i++)
		free(tmp[i]);
}

NOINLINE void atexit_alloc(void)
{
	at_keep = malloc(1357);
}

static void at_exit_handler(void)
{
	atexit_alloc();
}

int main(int argc, char **argv)
{
	static const char marker[] = "t_exit: stdout marker\n";

	if (atexit(at_exit_handler) != 0)
		return 1;
	exit_keep();
	exit_freed();
	exit_release();
	if (write(1, marker, sizeof marker - 1) < 0)
		return 1;
	if (argc > 1 && (strcmp(argv[1], "_exit") == 0 || strcmp(argv[1], "-v") == 0))
		_exit(5);
	exit(3);
}
