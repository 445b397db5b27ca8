/*
 * Target for RSS beside the heap: RSS that never passes through malloc.
 * Usage: t_rss FIFO
 *   1. keep_fn: malloc(100000), kept (the heap: 100000 bytes in use).
 *   2. An anonymous private mapping of 32 MiB, every page written (32 MiB
 *      of RssAnon that no heap profile shows).
 *   Prints "ready", blocks on FIFO until the harness has looked, prints
 *   "done" and exits 0 (the mapping and the block still held).
 * No stdio (say() writes directly), so nothing else allocates.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sync.h"

#define MAP_BYTES (32u << 20)

void *volatile kept, *volatile mapped;

__attribute__((noinline)) static void keep_fn(void)
{
	kept = malloc(100000);
	memset(kept, 1, 100000);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	keep_fn();
	mapped = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mapped == MAP_FAILED)
		return 3;
	memset(mapped, 7, MAP_BYTES);
	say("ready\n");
	wait_line(argv[1]);
	say("done\n");
	return 0;
}
