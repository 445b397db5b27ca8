/* /proc/PID/status's Rss lines. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/rss.h"

static bool field(const char *text, const char *name, uint64_t *bytes)
{
	const char *at = strstr(text, name);

	if (!at)
		return false;
	*bytes = strtoull(at + strlen(name), NULL, 10) * 1024;  /* the kernel prints kB */
	return true;
}

static bool read_now(pid_t pid, struct ht_rss *r)
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

/* The last value read per pid, for after its exit; a pid's slot may be taken by another (then it has none). */
#define LAST_SLOTS 256
static struct {
	pid_t pid;
	struct ht_rss rss;
} last[LAST_SLOTS];
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;

void rss_read(pid_t pid, struct ht_rss *r)
{
	unsigned k = (unsigned)pid % LAST_SLOTS;
	bool now = read_now(pid, r);

	pthread_mutex_lock(&last_lock);
	if (now) {
		last[k].pid = pid;
		last[k].rss = *r;
	} else if (last[k].pid == pid) {
		*r = last[k].rss;
		r->last = true;
	}
	pthread_mutex_unlock(&last_lock);
}

void rss_add(struct ht_rss *a, const struct ht_rss *b)
{
	if (!b->known)
		return;
	a->anon += b->anon;
	a->file += b->file;
	a->shmem += b->shmem;
	a->known = true;
}
