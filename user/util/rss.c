/* /proc/PID/status's Rss lines, and heaptrace's part of them from /proc/PID/maps and pagemap. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/procfs.h"
#include "util/rss.h"
#include "util/time.h"

#define PAGE 4096ull

static bool field(const char *text, const char *name, uint64_t *bytes)
{
	const char *at = strstr(text, name);

	if (!at)
		return false;
	*bytes = strtoull(at + strlen(name), NULL, 10) * 1024;  /* the kernel prints kB */
	return true;
}

static bool read_status(pid_t pid, struct ht_rss *r)
{
	char path[48], text[4096];
	ssize_t n;
	int fd;

	memset(r, 0, sizeof(*r));
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	/* status is about 1.5 KiB: one read; the Rss lines are in its first half. */
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = 0;
	/* A zombie's status has no Rss lines. */
	r->known = field(text, "\nRssAnon:", &r->anon) && field(text, "\nRssFile:", &r->file) &&
		   field(text, "\nRssShmem:", &r->shmem);
	if (!r->known)
		memset(r, 0, sizeof(*r));
	return r->known;
}

/* Scanning one process's maps for heaptrace's mappings. */
struct own_scan {
	pid_t pid;
	int pagemap;            /* opened at the first mapping of ours: most processes have none */
	int kpageflags;         /* opened at the first private page present; -2: not readable */
	uint64_t stub_end;      /* the line before was the stub's file, ending here */
	uint64_t bytes;
};

#define PM_PRESENT (1ull << 63)
#define PM_FILE (1ull << 61)            /* a file page or shared anonymous: never the zero page */
#define PM_PFN ((1ull << 55) - 1)       /* 0 unless the reader has CAP_SYS_ADMIN */
#define KPF_ZERO_PAGE 24

/*
 * Whether pfn is the kernel's zero page (or its huge one): a read of
 * private memory never written maps it (the stub's probes of busy[] read
 * past the slot they take, one run in 40 onto a page no thread writes).
 * It is nobody's memory and smaps' Rss leaves it out.  Not known (no pfn,
 * no kpageflags): counted.
 */
static bool zero_page(struct own_scan *s, uint64_t pfn)
{
	uint64_t flags;

	if (!pfn || s->kpageflags == -2)
		return false;
	if (s->kpageflags < 0 && (s->kpageflags = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC)) < 0) {
		s->kpageflags = -2;
		return false;
	}
	return pread(s->kpageflags, &flags, sizeof(flags), (off_t)(pfn * sizeof(flags))) == sizeof(flags) &&
	       (flags >> KPF_ZERO_PAGE & 1);
}

/*
 * Pages of [lo, hi) present in pid's page tables, from pagemap, which
 * reads only these pages' entries: smaps gives the same count (its Rss:)
 * but walks every mapping of the process, under the lock its mmap and
 * munmap wait for, whatever its size.
 */
static uint64_t resident(struct own_scan *s, uint64_t lo, uint64_t hi)
{
	uint64_t ent[512], pages = 0;
	char path[48];

	if (s->pagemap < 0) {
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)s->pid);
		if ((s->pagemap = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return 0;
	}
	for (uint64_t pg = lo / PAGE; pg < hi / PAGE;) {
		uint64_t want = hi / PAGE - pg < 512 ? hi / PAGE - pg : 512;
		ssize_t got = pread(s->pagemap, ent, want * sizeof(ent[0]), (off_t)(pg * sizeof(ent[0])));
		if (got < (ssize_t)sizeof(ent[0]))
			break;
		for (size_t i = 0; i < (size_t)got / sizeof(ent[0]); i++)
			pages += (ent[i] & PM_PRESENT) && ((ent[i] & PM_FILE) || !zero_page(s, ent[i] & PM_PFN));
		pg += (size_t)got / sizeof(ent[0]);
	}
	return pages * PAGE;
}

/*
 * Whether a mapping is heaptrace's: its memfds (the stub's file, the ring,
 * the unwind tables), CPython's jump page, and the stub's data, the
 * unnamed anonymous mapping inject.c puts right after the stub's file
 * (MADV_WIPEONFORK keeps the kernel from merging it with a neighbour).
 */
static bool ours(struct own_scan *s, const struct map_entry *e)
{
	bool data = s->stub_end == e->lo && !e->path[0];

	s->stub_end = strncmp(e->path, "/memfd:heaptrace-stub", 21) ? 0 : e->hi;
	return data || !strncmp(e->path, "/memfd:heaptrace-", 17) || !strncmp(e->path, "[anon:heaptrace-", 16);
}

/* The whole lines of maps text, NUL-terminated. */
static void scan_lines(struct own_scan *s, const char *text)
{
	struct map_entry e;

	for (const char *line = text; *line;) {
		const char *nl = strchrnul(line, '\n'), *pos = line;
		/* Parsed only where it can be ours: a big process has thousands of lines. */
		bool maybe = s->stub_end || memmem(line, nl - line, "heaptrace-", 10);
		line = *nl ? nl + 1 : nl;
		if (maybe && maps_next(&pos, &e) && pos == line && ours(s, &e))
			s->bytes += resident(s, e.lo, e.hi);
	}
}

/* Bytes resident in heaptrace's mappings of pid (0 if it has none, or its maps cannot be read). */
static uint64_t own_read(pid_t pid)
{
	struct own_scan s = { .pid = pid, .pagemap = -1, .kpageflags = -1 };
	/* A line is at most a page of path and its fields: one always fits. */
	char path[48], buf[8192];
	size_t have = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	while ((n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		have += n;
		buf[have] = 0;
		char *end = strrchr(buf, '\n');
		if (!end)
			continue;
		*end = 0;
		scan_lines(&s, buf);
		have -= end + 1 - buf;
		memmove(buf, end + 1, have);
	}
	close(fd);
	if (s.pagemap >= 0)
		close(s.pagemap);
	if (s.kpageflags >= 0)
		close(s.kpageflags);
	return s.bytes;
}

/* The last value read per pid, for after its exit; a pid's slot may be taken by another (then it has none). */
#define LAST_SLOTS 256
static struct {
	pid_t pid;
	struct ht_rss rss;
	uint64_t own_ns;        /* when rss.own was read (monotonic_ns) */
} last[LAST_SLOTS];
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;

/* pid's RSS, with heaptrace's part read again if the one last read is max_age_ns old. */
static void read_rss(pid_t pid, struct ht_rss *r, uint64_t max_age_ns)
{
	unsigned k = (unsigned)pid % LAST_SLOTS;
	bool now = read_status(pid, r), fresh;
	uint64_t t = monotonic_ns();

	pthread_mutex_lock(&last_lock);
	fresh = now && last[k].pid == pid && t - last[k].own_ns < max_age_ns;
	if (fresh)
		r->own = last[k].rss.own;
	pthread_mutex_unlock(&last_lock);
	/* Outside the lock: another process's sample need not wait for this one's maps. */
	if (now && !fresh)
		r->own = own_read(pid);
	pthread_mutex_lock(&last_lock);
	if (now) {
		last[k].own_ns = fresh && last[k].pid == pid ? last[k].own_ns : t;
		last[k].pid = pid;
		last[k].rss = *r;
	} else if (last[k].pid == pid) {
		*r = last[k].rss;
		r->last = true;
	}
	pthread_mutex_unlock(&last_lock);
}

void rss_read(pid_t pid, struct ht_rss *r)
{
	read_rss(pid, r, 0);
}

void rss_read_often(pid_t pid, struct ht_rss *r)
{
	read_rss(pid, r, RSS_OWN_MAX_AGE_MS * 1000000ull);
}

void rss_add(struct ht_rss *a, const struct ht_rss *b)
{
	if (!b->known)
		return;
	a->anon += b->anon;
	a->file += b->file;
	a->shmem += b->shmem;
	a->own += b->own;
	a->known = true;
}
