/*
 * Unit test for user/util/rss.c's part of heaptrace: the bytes resident in
 * its mappings of a process, here of this one, laid out as the fast path
 * lays out the stub (a memfd "heaptrace-stub", its data the anonymous
 * mapping right after).  The data's pages: one written, one only read (the
 * kernel maps its zero page there: nobody's memory, which smaps' Rss leaves
 * out, and so must heaptrace), the rest untouched.  Run as root (the zero
 * page is known by its frame number, which pagemap shows root only).
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/rss.h"

#include "check.h"

#define PAGE 4096

/* Rss: of the mapping at addr in /proc/self/smaps, in bytes; -1 if not found. */
static long smaps_rss(const void *addr)
{
	char line[512], want[32];
	long kb = -1;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	snprintf(want, sizeof(want), "%lx-", (unsigned long)addr);
	while (f && fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' ') && line[0] != ' ')
			in = !strncmp(line, want, strlen(want));
		else if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

int main(void)
{
	struct ht_rss r;
	int fd = memfd_create("heaptrace-stub", MFD_CLOEXEC);

	if (!check(fd >= 0 && ftruncate(fd, PAGE) == 0, "a memfd heaptrace-stub of a page"))
		return check_summary();
	rss_read(getpid(), &r);
	check(r.known && r.own == 0, "no mapping of ours yet: own %llu, want 0", (unsigned long long)r.own);

	/* Reserved as one range so that the data lands right after the file, as inject.c maps them. */
	char *base = mmap(NULL, 5 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *file = mmap(base, PAGE, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
	char *data = mmap(base + PAGE, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (!check(base != MAP_FAILED && file == base && data == base + PAGE, "the stub's file and data mapped"))
		return check_summary();
	madvise(data, 4 * PAGE, MADV_WIPEONFORK);
	volatile char sink = file[0];
	data[0] = 1;
	sink = data[PAGE];
	(void)sink;

	rss_read(getpid(), &r);
	long s_file = smaps_rss(file), s_data = smaps_rss(data);
	check(s_file == PAGE && s_data == PAGE, "smaps: the file's page %ld, the data's written page %ld (want %d each)",
	      s_file, s_data, PAGE);
	check(r.own == 2 * PAGE, "own %llu bytes = the file's page and the data's written one, not the page only read "
	      "(the zero page); want %d", (unsigned long long)r.own, 2 * PAGE);

	data[PAGE] = 1;
	rss_read(getpid(), &r);
	check(r.own == 3 * PAGE, "the page read, then written: own %llu, want %d", (unsigned long long)r.own, 3 * PAGE);
	munmap(base, 5 * PAGE);
	close(fd);
	return check_summary();
}
