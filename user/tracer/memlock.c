/*
 * The kernel's own figure of a map's memory: what the load records for
 * each empty map, the levels for each level made, the drain for its
 * object's, and memory.c adds up.
 */
#include <stdio.h>

#include "tracer/internal.h"

uint64_t tracer_memlock_of(int fd)
{
	char path[64], line[256];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %lu", &v) == 1)
			break;
	fclose(f);
	return v;
}
