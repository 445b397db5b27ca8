/*
 * Target for scenario suppress: leaks whose stacks a suppression file
 * matches by function, by source file and by module (tests/scenarios/
 * triage.sh holds the expected numbers).
 *
 *   keep_cache:  malloc(1000), kept           (leak:keep_cache)
 *   vendor_init: malloc(2000), kept, its code says it is in vendor_cache.c
 *                                             (leak:vendor_cache.c)
 *   real_leak:   malloc(3000), kept           (suppressed by nothing)
 *   stdout:      one line, so stdio allocates its buffer (the built-in list)
 * Its stdio buffer's size goes to stderr first ("stdout buffer N"): what
 * glibc's _IO_file_doallocate picks from fstat.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define NOINLINE __attribute__((noinline))

void *volatile kept[3];

NOINLINE void keep_cache(void)
{
	kept[0] = malloc(1000);
}

#line 1 "vendor_cache.c"
NOINLINE void vendor_init(void)
{
	kept[1] = malloc(2000);
}
#line 37 "tests/targets/t_suppress.c"

NOINLINE void real_leak(void)
{
	kept[2] = malloc(3000);
}

int main(void)
{
	struct stat st;
	long size = BUFSIZ;

	if (!fstat(1, &st) && st.st_blksize > 0 && st.st_blksize < BUFSIZ)
		size = st.st_blksize;
	fprintf(stderr, "stdout buffer %ld\n", size);
	keep_cache();
	vendor_init();
	real_leak();
	printf("done\n");
	return 0;
}
