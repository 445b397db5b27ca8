/*
 * heaptrace: the command table.  The first word picks a command; without
 * one (an option or the command to launch comes first) it is `trace`.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/opt.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const struct command_opts *opts;
} commands[] = {
	{ "trace", cmd_trace, &trace_command },
	{ "diff", cmd_diff, &diff_command },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

int main(int argc, char **argv)
{
	/* HTTP request threads would each get a malloc arena that is never given back. */
	mallopt(M_ARENA_MAX, 2);
	/*
	 * Reading a profile takes buffers of megabytes (hash tables sized by
	 * --max-stacks, batches of map values) for a moment, every snapshot
	 * and scrape.  A fixed threshold keeps them mmapped, so they go back
	 * when freed; glibc's sliding one would move them into the heap for good.
	 */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	/* Hidden: the build generates heaptrace(8) and the completions from it (dist/), so they follow the tables. */
	if (argc == 2 && !strcmp(argv[1], "--dump-options")) {
		for (size_t i = 0; i < N_COMMANDS; i++)
			opt_dump(commands[i].name, commands[i].opts, stdout);
		return fflush(stdout) ? 1 : 0;
	}
	for (size_t i = 0; argc > 1 && i < N_COMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	return cmd_trace(argc, argv);
}
