/*
 * Target for --mmap (tests/scenarios/mmap.sh).  Each function below makes
 * and keeps what its comment says; main calls them in order, then waits on
 * FIFO (if given) and exits.  In use at the end, by function:
 *   map_big      [mmap]  67108864  one anonymous 64 MiB mapping
 *   grow_brk     [brk]    8388608  sbrk(8 MiB)
 *   big_malloc   malloc   1048576  malloc(1 MiB): glibc serves it by mmap,
 *                                  which is the allocator's, not counted
 *   map_part     [mmap]   8388608  16 MiB mapped, then munmap of [4, 8) MiB
 *                                  (a hole) and of [12, 16) MiB (the tail)
 *   map_grow     [mmap]  12582912  4 MiB mapped, mremap'd to 12 MiB
 *   map_file     none              a file's pages mapped: not anonymous
 *   map_gone     none              16 MiB mapped and unmapped whole
 * Every mapping is written, so it is resident.  No stdio.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sync.h"

#define NOINLINE __attribute__((noinline))
#define MiB (1ul << 20)

void *volatile keep[8];

static inline __attribute__((always_inline)) void *anon(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(4);
	memset(p, 0x5a, n);
	return p;
}

NOINLINE void map_big(void)
{
	keep[0] = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (keep[0] == MAP_FAILED)
		_exit(4);
	memset(keep[0], 1, 64 * MiB);
}

NOINLINE void grow_brk(void)
{
	char *p = sbrk(8 * MiB);

	if (p == (void *)-1)
		_exit(5);
	memset(p, 2, 8 * MiB);
	keep[1] = p;
}

NOINLINE void big_malloc(void)
{
	keep[2] = malloc(MiB);
	if (!keep[2])
		_exit(6);
	memset(keep[2], 3, MiB);
}

NOINLINE void map_part(void)
{
	char *p = anon(16 * MiB);

	if (munmap(p + 4 * MiB, 4 * MiB) || munmap(p + 12 * MiB, 4 * MiB))
		_exit(7);
	keep[3] = p;
}

NOINLINE void map_grow(void)
{
	char *p = anon(4 * MiB), *q = mremap(p, 4 * MiB, 12 * MiB, MREMAP_MAYMOVE);

	if (q == MAP_FAILED)
		_exit(8);
	memset(q, 4, 12 * MiB);
	keep[4] = q;
}

NOINLINE void map_file(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	void *p = fd < 0 ? MAP_FAILED : mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);

	if (p == MAP_FAILED)
		_exit(9);
	keep[5] = p;
	close(fd);
}

NOINLINE void map_gone(void)
{
	char *p = anon(16 * MiB);

	if (munmap(p, 16 * MiB))
		_exit(10);
}

int main(int argc, char **argv)
{
	map_big();
	grow_brk();
	big_malloc();
	map_part();
	map_grow();
	map_file();
	map_gone();
	say("ready\n");
	if (argc > 1)
		read_fifo_line(argv[1], NULL, 0);
	return 0;
}
