/*
 * Target for the OOM and snapshot-by-volume tests.  Usage:
 *   t_oom grow FIFO          prints "ready", waits for a line on FIFO, then
 *                            grow_heap: malloc(1 MiB) blocks, each written
 *                            (resident), kept, up to 512 of them: in a
 *                            smaller memory cgroup the OOM killer ends it;
 *                            if not, prints "survived" and exits 3.
 *   t_oom forkgrow FIFO      prints "ready", waits for a line, forks: the
 *                            child runs grow's loop; the parent waits for
 *                            it, prints "child-killed" if a signal ended
 *                            it, waits for a line and exits 0.
 *   t_oom steps FIFO N SIZE  prints "ready"; N times: waits for a line,
 *                            step_alloc: one malloc(SIZE), written, kept,
 *                            prints "stepI"; then waits for a line, exits 0.
 * No stdio: the traced phase allocates nothing else.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

void *volatile keep[512];

NOINLINE void *grow_heap(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 0x5a, n);
	return p;
}

NOINLINE void *step_alloc(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 0x5a, n);
	return p;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "grow")) {
		say("ready\n");
		read_fifo_line(argv[2], NULL, 0);
		for (int i = 0; i < 512; i++)
			keep[i] = grow_heap(1 << 20);
		say("survived\n");
		return 3;
	}
	if (argc == 3 && !strcmp(argv[1], "forkgrow")) {
		int status;
		say("ready\n");
		read_fifo_line(argv[2], NULL, 0);
		pid_t child = fork();
		if (child == 0) {
			for (int i = 0; i < 512; i++)
				keep[i] = grow_heap(1 << 20);
			_exit(3);
		}
		if (child > 0 && waitpid(child, &status, 0) == child && WIFSIGNALED(status))
			say("child-killed\n");
		read_fifo_line(argv[2], NULL, 0);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "steps")) {
		int n = atoi(argv[3]);
		size_t size = strtoul(argv[4], NULL, 0);
		char line[32] = "step";

		say("ready\n");
		for (int i = 1; i <= n && i < 512; i++) {
			read_fifo_line(argv[2], NULL, 0);
			keep[i] = step_alloc(size);
			line[4] = (char)('0' + i % 10);
			line[5] = '\n';
			line[6] = '\0';
			say(line);
		}
		read_fifo_line(argv[2], NULL, 0);
		return 0;
	}
	say("usage: t_oom grow|forkgrow FIFO | t_oom steps FIFO N SIZE\n");
	return 2;
}
