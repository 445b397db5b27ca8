/*
 * A pre-fork server with known allocations, for --follow-fork --merge and
 * for the hint about untraced children.
 *   parent:   parent_before  2 x 1000 kept, allocated before the forks
 *             parent_after   1 x 4000 kept, after every worker ended
 *   worker i (i = 0 .. K-1), each a fork of the parent:
 *             worker_keep    3 x 2000 kept
 *             worker_temp    1 x 500, freed
 *             worker_id      1 x (i + 1) * 100 kept: each worker's own size
 * With "exec", the last worker instead executes this program again as
 * "t_prefork worker", which runs exec_worker, 2 x 300 kept (the same
 * program, mapped elsewhere: its stacks need its own memory map).
 * Workers run one after another (each waited for), so the order is fixed.
 * With a FIFO the parent says "done" after parent_after and waits for a
 * line on it before it exits (for scrapes of --http).  No stdio.
 * Usage: t_prefork K [plain|exec] [FIFO]
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

void *volatile before[2], *volatile after, *volatile keep[3], *volatile id, *volatile ekeep[2];

NOINLINE void parent_before(void)
{
	for (int i = 0; i < 2; i++)
		before[i] = malloc(1000);
}

NOINLINE void parent_after(void) { after = malloc(4000); }

NOINLINE void worker_keep(void)
{
	for (int i = 0; i < 3; i++)
		keep[i] = malloc(2000);
}

NOINLINE void worker_temp(void)
{
	void *volatile p = malloc(500);
	free(p);
}

NOINLINE void worker_id(int i) { id = malloc((size_t)(i + 1) * 100); }

NOINLINE void exec_worker(void)
{
	for (int i = 0; i < 2; i++)
		ekeep[i] = malloc(300);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "worker")) {
		exec_worker();
		return 0;
	}
	int k = argc > 1 ? atoi(argv[1]) : 4;
	int exec_last = argc > 2 && !strcmp(argv[2], "exec");

	parent_before();
	for (int i = 0; i < k; i++) {
		pid_t c = fork();
		if (c < 0)
			return 1;
		if (!c) {
			if (exec_last && i == k - 1) {
				execl("/proc/self/exe", argv[0], "worker", (char *)NULL);
				_exit(4);
			}
			worker_keep();
			worker_temp();
			worker_id(i);
			_exit(0);
		}
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
			return 3;
	}
	parent_after();
	if (argc > 3) {
		say("done\n");
		wait_line(argv[3]);
	}
	return 0;
}
