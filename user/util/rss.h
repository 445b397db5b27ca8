/*
 * A process's resident memory as the kernel counts it for the OOM killer:
 * /proc/PID/status's RssAnon, RssFile and RssShmem, shown beside the heap
 * (the heap is what the allocator hands out; RSS is what the process costs),
 * and how much of it heaptrace's own mappings in the process hold.
 */
#ifndef HT_RSS_H
#define HT_RSS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ht_rss {
	uint64_t anon, file, shmem;     /* bytes */
	/*
	 * Bytes of the above resident in heaptrace's own mappings in the
	 * process: the stub's file and its data, the ring, the unwind tables,
	 * CPython's jump page; 0 with --no-inject.  Already counted in anon
	 * and shmem (the memfds' pages are shmem, the stub's data and the
	 * pages the kernel copied on a write are anon): never add it to them.
	 */
	uint64_t own;
	bool known;                     /* false: never read while the process had its memory */
	bool last;                      /* the process is gone: this is its RSS as last read (at its exit) */
};

/*
 * pid's RSS now, heaptrace's part read now too.  A process that has exited
 * (a zombie has no memory) gets the value last read, which the ptrace loop
 * takes at its exit event, so the final profile of a command says what it
 * held at the end.  No allocation.
 */
void rss_read(pid_t pid, struct ht_rss *r);

/*
 * The same for the timeline's 25 samples a second: heaptrace's part is
 * read again only once it is RSS_OWN_MAX_AGE_MS old.  It walks the
 * process's maps, which a big process has thousands of lines of, and it
 * moves slowly (the ring and tables fill once).
 */
#define RSS_OWN_MAX_AGE_MS 1000
void rss_read_often(pid_t pid, struct ht_rss *r);

static inline uint64_t rss_total(const struct ht_rss *r)
{
	return r->anon + r->file + r->shmem;
}

/* a += b (a tree's RSS: each process's resident pages, shared ones counted in each). */
void rss_add(struct ht_rss *a, const struct ht_rss *b);

#endif
