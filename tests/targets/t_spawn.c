/*
 * A compiler driver in small, for --follow-fork and exec: it runs a
 * program in a child the way gcc runs cc1, and waits for it.
 *   parent: spawn_keep   1 x 1111 kept, before the child
 *   child:  vfork: execv at once, as gcc's driver does (no allocation);
 *           fork:  pre_exec 2 x 999 kept, then execv: blocks of the
 *                  program the child replaced, not of the one it runs
 * Usage: t_spawn vfork|fork PROG [ARG...]; exits with PROG's status (3 if
 * it did not exit normally, 127 if it could not be run).  No stdio.
 * tests/scenarios/exec.sh holds the expected numbers.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

void *volatile keep, *volatile pre[2];

NOINLINE void spawn_keep(void) { keep = malloc(1111); }

NOINLINE void pre_exec(void)
{
	for (int i = 0; i < 2; i++)
		pre[i] = malloc(999);
}

int main(int argc, char **argv)
{
	int st;

	if (argc < 3)
		return 2;
	spawn_keep();
	pid_t c = strcmp(argv[1], "fork") ? vfork() : fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		if (!strcmp(argv[1], "fork"))
			pre_exec();
		execv(argv[2], argv + 2);
		_exit(127);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st))
		return 3;
	return WEXITSTATUS(st);
}
