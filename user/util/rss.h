/*
 * A process's resident memory as the kernel counts it for the OOM killer:
 * /proc/PID/status's RssAnon, RssFile and RssShmem, shown beside the heap
 * (the heap is what the allocator hands out; RSS is what the process costs).
 */
#ifndef HT_RSS_H
#define HT_RSS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ht_rss {
	uint64_t anon, file, shmem;     /* bytes */
	bool known;                     /* false: never read while the process had its memory */
	bool last;                      /* the process is gone: this is its RSS as last read (at its exit) */
};

/*
 * pid's RSS now.  A process that has exited (a zombie has no memory) gets
 * the value last read, which the ptrace loop takes at its exit event, so
 * the final profile of a command says what it held at the end.  No
 * allocation: the timeline calls it 25 times a second.
 */
void rss_read(pid_t pid, struct ht_rss *r);

static inline uint64_t rss_total(const struct ht_rss *r)
{
	return r->anon + r->file + r->shmem;
}

/* a += b (a tree's RSS: each process's resident pages, shared ones counted in each). */
void rss_add(struct ht_rss *a, const struct ht_rss *b);

#endif
