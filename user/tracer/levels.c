/*
 * The live map's levels (bpf/live.bpf.h): made here as the blocks grow, by
 * a thread the BPF side wakes through a ring buffer, so that memory is
 * taken as the target's blocks need it, not at --max-allocs up front.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracer/tracer.h"  /* before the skeleton: it names our shared structs */
#include "heaptrace.skel.h"
#include "tracer/internal.h"
#include "util/log.h"

/* Blocks level k can hold: the first HT_LIVE_FIRST_LEVEL, each next one as many as all before it, the last the rest. */
uint32_t tracer_level_cap(const struct live_levels *lv, int k)
{
	uint64_t before = 0;

	for (int i = 0; i < k; i++)
		before += lv->cap[i];
	uint64_t left = lv->max > before ? lv->max - before : 0;
	uint64_t cap = k == 0 ? HT_LIVE_FIRST_LEVEL : k == HT_LIVE_LEVELS - 1 ? left : before;
	return cap < left ? cap : left;
}

/*
 * The next level into the live map, then live_top to it, then the count at
 * which the BPF side asks for the one after: when the newest level is a
 * quarter full, were the older ones full.  The other three quarters are
 * the time this thread has to wake up and make it: blocks that find no
 * room are lost.  -1 when no level can be made.
 */
static int add_level(struct tracer *tr)
{
	struct live_levels *lv = &tr->lv;
	int k = lv->n;
	uint32_t cap = k < HT_LIVE_LEVELS ? tracer_level_cap(lv, k) : 0;
	char name[16];

	if (!cap)
		return -1;
	snprintf(name, sizeof(name), "live_%u", (unsigned)k & 7u);   /* k < HT_LIVE_LEVELS = 8 */
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, name, sizeof(__u64), sizeof(struct ht_block), cap, &opts);
	uint32_t key = k;
	if (fd < 0 || bpf_map_update_elem(bpf_map__fd(tr->skel->maps.live), &key, &fd, BPF_ANY)) {
		uint64_t room = 0;
		for (int i = 0; i < k; i++)
			room += lv->cap[i];
		if (!lv->failed)
			ht_err("cannot make room for %u more live blocks: %s; blocks beyond %" PRIu64
			       " are not tracked (live_map_full)", cap, strerror(errno), room);
		lv->failed = true;
		if (fd >= 0)
			close(fd);
		tr->skel->data_live->live_grow_at = 0;
		return -1;
	}
	lv->fds[k] = fd;
	lv->cap[k] = cap;
	lv->base[k] = tracer_memlock_of(fd);
	__atomic_store_n(&lv->n, k + 1, __ATOMIC_RELEASE);
	tr->skel->data_live->live_top = k;
	uint64_t room = 0;
	for (int i = 0; i <= k; i++)
		room += lv->cap[i];
	tr->skel->data_live->live_grow_at = room < lv->max && k + 1 < HT_LIVE_LEVELS ? room - cap + cap / 4 + 1 : 0;
	return 0;
}

/* Levels until the blocks are below the next threshold (they may have passed it while one was made). */
static void grow(struct tracer *tr)
{
	struct heaptrace__data_live *d = tr->skel->data_live;

	while (d->live_grow_at && d->live_count >= d->live_grow_at)
		if (add_level(tr))
			break;
}

static int on_grow(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

static void *grow_main(void *arg)
{
	struct tracer *tr = arg;

	/*
	 * Ahead of the busy threads of a loaded machine when woken (as root:
	 * otherwise it stays as it is): a late level costs blocks.  It sleeps
	 * otherwise, and its work is one map creation.
	 */
	if (setpriority(PRIO_PROCESS, gettid(), -10))
		errno = 0;
	struct pollfd p[2] = { { .fd = ring_buffer__epoll_fd(tr->lv.rb), .events = POLLIN },
			       { .fd = tr->lv.stop_fd, .events = POLLIN } };

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		ring_buffer__consume(tr->lv.rb);
		grow(tr);
	}
	return NULL;
}

int tracer_start_levels(struct tracer *tr, uint32_t max_live)
{
	struct live_levels *lv = &tr->lv;

	lv->max = max_live;
	lv->stop_fd = -1;
	if (add_level(tr))
		return -1;
	lv->rb = ring_buffer__new(bpf_map__fd(tr->skel->maps.live_grow), on_grow, NULL, NULL);
	lv->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (!lv->rb || lv->stop_fd < 0 || (errno = pthread_create(&lv->thread, NULL, grow_main, tr))) {
		ht_err("cannot start the thread that makes room for live blocks: %s", strerror(errno));
		return -1;
	}
	lv->running = true;
	return 0;
}

void tracer_stop_levels(struct tracer *tr)
{
	struct live_levels *lv = &tr->lv;
	uint64_t one = 1;

	if (lv->running && write(lv->stop_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(lv->thread, NULL);
	if (lv->stop_fd > 0)
		close(lv->stop_fd);
	ring_buffer__free(lv->rb);
	for (int i = 0; i < lv->n; i++)
		close(lv->fds[i]);
	memset(lv, 0, sizeof(*lv));
}

int tracer_live_fds(const struct tracer *tr, int fds[HT_LIVE_LEVELS])
{
	int n = __atomic_load_n(&tr->lv.n, __ATOMIC_ACQUIRE);

	memcpy(fds, tr->lv.fds, n * sizeof(*fds));
	return n;
}
