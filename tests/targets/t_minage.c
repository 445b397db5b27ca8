/*
 * Target for --min-age.  Usage: t_minage FIFO
 *   old_fn:   5 x malloc(4096), kept; prints "old", then blocks until a line
 *             is written to FIFO (the harness waits a few seconds first)
 *   young_fn: 7 x malloc(3000), kept; exits 0 at once, so heaptrace reads
 *             the profile while these blocks are milliseconds old.
 * In use 12 objects / 20480 + 21000 = 41480 bytes, all allocated once.
 * No stdio, so nothing else allocates.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))

void *volatile old_blocks[5];
void *volatile young_blocks[7];

NOINLINE void old_fn(void)
{
	for (int i = 0; i < 5; i++)
		old_blocks[i] = malloc(4096);
}

NOINLINE void young_fn(void)
{
	for (int i = 0; i < 7; i++)
		young_blocks[i] = malloc(3000);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		say("usage: t_minage FIFO\n");
		return 2;
	}
	old_fn();
	say("old\n");
	wait_line(argv[1]);
	young_fn();
	return 0;
}
