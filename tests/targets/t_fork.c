/*
 * A process tree with known allocations, for --follow-fork.
 *   parent:     fork_before  1 x 1000 kept, allocated before the fork
 *               fork_shared  1 x 3000 kept by the parent; the child frees its copy
 *               fork_after   1 x 4000 kept, allocated after the fork
 *   child:      child_keep   3 x 2000 kept
 *               child_temp   1 x 500, freed
 *               free of fork_shared's block: inherited, not the child's own
 *   grandchild: grandchild_keep 2 x 700 kept
 * With a FIFO (heaptrace -p) the parent first allocates fork_pre, 2 x 100,
 * before it says "ready": allocated before heaptrace attached, so the
 * child's frees of its copies are unmatched_frees, the child's alone.
 * Each process waits for its children, and the parent allocates after its
 * child ended, so the order is fixed.  No stdio: nothing else allocates.
 * Usage: t_fork [plain|exec [FIFO]]: with exec the grandchild runs
 * /bin/true instead of allocating; with a FIFO it says "ready" and waits
 * for a line on it first (for heaptrace -p).
 * tests/run.sh holds the expected numbers.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

void *volatile pre[2], *volatile before, *volatile shared, *volatile after, *volatile keep[3], *volatile gkeep[2];

NOINLINE void fork_pre(void)
{
	for (int i = 0; i < 2; i++)
		pre[i] = malloc(100);
}

NOINLINE void fork_before(void) { before = malloc(1000); }
NOINLINE void fork_shared(void) { shared = malloc(3000); }
NOINLINE void fork_after(void) { after = malloc(4000); }

NOINLINE void child_keep(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = malloc(2000);
}

NOINLINE void child_temp(void)
{
	void *volatile p = malloc(500);
	free(p);
}

NOINLINE void grandchild_keep(void)
{
	for (int i = 0; i < 2; i++)
		gkeep[i] = malloc(700);
}

/* Wait for every child; all must have exited 0, or we exit 3. */
static void wait_all(void)
{
	int st;

	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			_exit(3);
}

int main(int argc, char **argv)
{
	if (argc > 2) {
		fork_pre();
		say("ready\n");
		wait_line(argv[2]);
	}
	fork_before();
	fork_shared();
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		child_keep();
		child_temp();
		free(shared);
		for (int i = 0; i < 2; i++)
			if (pre[i])
				free(pre[i]);
		pid_t g = fork();
		if (g == 0) {
			if (argc > 1 && !strcmp(argv[1], "exec"))
				execl("/bin/true", "true", (char *)NULL);
			grandchild_keep();
			_exit(0);
		}
		wait_all();
		_exit(0);
	}
	wait_all();
	fork_after();
	say("bye\n");
	return 0;
}
