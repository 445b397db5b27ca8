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

#include "tracer/state.h"  /* before the skeleton: it names our shared structs */
#include "heaptrace.skel.h"
#include "tracer/internal.h"
#include "tracer/levels.h"
#include "util/log.h"

/*
 * Blocks level k can hold: the first HT_LIVE_FIRST_LEVEL, the second
 * seven times as many, each next one three times as many as all before
 * it, the last the rest.  A block's insert looks for an older copy of its
 * address in every other level, and a free looks from the newest down: a
 * million blocks in 4 levels (8K, 56K, 192K, 768K), not 7 as by doubling,
 * took the drain of bench-python's loop on 3.12 from 590 to 525 ns a
 * slot.  The first is small because it is preallocated at start-up (a
 * small target's maps stay under 16 MiB), the second large because a
 * level costs a lookup.
 */
uint32_t tracer_level_cap(const struct live_levels *lv, int k)
{
	uint64_t before = 0;

	for (int i = 0; i < k; i++)
		before += lv->cap[i];
	uint64_t left = lv->max > before ? lv->max - before : 0;
	uint64_t first = lv->prealloc ? HT_LIVE_FIRST_LEVEL : HT_LIVE_FIRST_LEVEL_GROWN;
	uint64_t cap = k == 0 ? first : k == HT_LIVE_LEVELS - 1 ? left : k == 1 && lv->prealloc ? 7 * before : 3 * before;
	return cap < left ? cap : left;
}

/* A hash map of cap blocks, a level's kind (preallocated or not: struct live_levels says when); -1 with errno. */
static int block_map(const struct live_levels *lv, const char *name, uint32_t cap)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = lv->prealloc ? 0 : BPF_F_NO_PREALLOC);
	return bpf_map_create(BPF_MAP_TYPE_HASH, name, sizeof(__u64), sizeof(struct ht_block), cap, &opts);
}

/* Level k, of cap blocks; -1 with errno. */
static int make_level(const struct live_levels *lv, int k, uint32_t cap)
{
	char name[16];

	snprintf(name, sizeof(name), "live_%u", (unsigned)k & 7u);   /* k < HT_LIVE_LEVELS = 8 */
	return block_map(lv, name, cap);
}

/* Level k could not be made or put in (errno): said once, and no level is asked for again. */
static int level_failed(struct tracer *tr, int k, uint32_t cap, int fd)
{
	struct live_levels *lv = &tr->lv;
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

/*
 * Level k, in the live map: live_top to it, then the count at which the
 * BPF side asks for the one after: when the newest level is a quarter
 * full, were the older ones full.  The other three quarters are the time
 * the growing thread has to wake up and make it (a ring's drain makes it
 * itself, before the run that needs it): blocks that find no room are
 * lost.  A level's memory is taken when it is made (a million blocks'
 * level at 112,000 live blocks), but at half full uprobes' allocations
 * outran the thread that preallocates it (kmem --no-inject: 4,285 of
 * 1,000,000 blocks live_map_full).
 */
static void level_in(struct tracer *tr, int k, uint32_t cap, int fd)
{
	struct live_levels *lv = &tr->lv;

	lv->fds[k] = fd;
	lv->cap[k] = cap;
	lv->base[k] = tracer_memlock_of(fd);
	__atomic_store_n(&lv->n, k + 1, __ATOMIC_RELEASE);
	tr->skel->data_live->live_top = k;
	uint64_t room = 0;
	for (int i = 0; i <= k; i++)
		room += lv->cap[i];
	tr->skel->data_live->live_grow_at = room < lv->max && k + 1 < HT_LIVE_LEVELS ? room - cap + cap / 4 + 1 : 0;
}

/* The next level, made and put in the live map.  -1 when no level can be made. */
static int add_level(struct tracer *tr)
{
	struct live_levels *lv = &tr->lv;
	int k = lv->n;
	uint32_t cap = k < HT_LIVE_LEVELS ? tracer_level_cap(lv, k) : 0;

	if (!cap)
		return -1;
	int fd = make_level(lv, k, cap);
	uint32_t key = k;
	if (fd < 0 || bpf_map_update_elem(bpf_map__fd(tr->skel->maps.live), &key, &fd, BPF_ANY))
		return level_failed(tr, k, cap, fd);
	level_in(tr, k, cap, fd);
	return 0;
}

/* The level thread and the ring's drain both add levels: one at a time. */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;

/* Levels until the blocks and more are below the next threshold (they may have passed it while one was made). */
static void grow_for(struct tracer *tr, uint64_t more)
{
	struct heaptrace__data_live *d = tr->skel->data_live;

	pthread_mutex_lock(&grow_lock);
	while (d->live_grow_at && d->live_count + more >= d->live_grow_at)
		if (add_level(tr))
			break;
	pthread_mutex_unlock(&grow_lock);
}

static void grow(struct tracer *tr)
{
	grow_for(tr, 0);
}

/*
 * Room for more blocks before a drain of the event ring puts them in: its
 * program accounts thousands of allocations in one run, faster than the
 * level thread could be woken and make a level (kmem: 171,102 of 1,000,000
 * blocks were live_map_full), where the record sites came one trap apart.
 */
void tracer_live_room(struct tracer *tr, uint64_t more)
{
	if (tr->lv.running)
		grow_for(tr, more);
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

static void *put_first(void *arg)
{
	struct live_levels *lv = arg;
	uint32_t key = 0;

	lv->put_err = bpf_map_update_elem(lv->outer_fd, &key, &lv->first_fd, BPF_ANY) ? errno : 0;
	return NULL;
}

/*
 * An update of a map of maps returns after an RCU grace period (the
 * kernel's maybe_wait_bpf_programs: 10-20 ms here), which start-up need
 * not wait for: the live map and its first level are made before the
 * load, and a thread puts the level in while the verifier checks the
 * programs.  The load takes the live map (bpf_map__reuse_fd).  Nothing
 * runs a program before tracer_start_levels has waited for the thread.
 */
void tracer_prepare_levels(struct tracer *tr, uint32_t max_live, bool prealloc)
{
	struct live_levels *lv = &tr->lv;

	lv->max = max_live;
	lv->prealloc = prealloc;
	uint32_t cap = tracer_level_cap(lv, 0);
	int inner = block_map(lv, "live.inner", 1);
	LIBBPF_OPTS(bpf_map_create_opts, outer_opts, .inner_map_fd = inner);
	int outer = inner < 0 ? -1 : bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "live", sizeof(__u32), sizeof(__u32),
						     HT_LIVE_LEVELS, &outer_opts);
	int first = outer < 0 || !cap ? -1 : make_level(lv, 0, cap);

	if (inner >= 0)
		close(inner);
	/* Anything missing: tracer_start_levels makes the level after the load, as it did before. */
	if (first < 0) {
		if (outer >= 0)
			close(outer);
		return;
	}
	lv->outer_fd = outer;
	lv->first_fd = first;
	if (pthread_create(&lv->putter, NULL, put_first, lv))
		put_first(lv);
	else
		lv->putting = true;
}

/* The live map made by tracer_prepare_levels, for the load to take; -1: none. */
int tracer_prepared_live(const struct tracer *tr)
{
	return tr->lv.outer_fd > 0 ? tr->lv.outer_fd : -1;
}

/* Level 0 put in by tracer_prepare_levels' thread: waited for. */
static void join_putter(struct live_levels *lv)
{
	if (lv->putting)
		pthread_join(lv->putter, NULL);
	lv->putting = false;
}

int tracer_start_levels(struct tracer *tr, uint32_t max_live)
{
	struct live_levels *lv = &tr->lv;

	lv->max = max_live;
	lv->stop_fd = -1;
	join_putter(lv);
	if (lv->first_fd > 0) {
		int fd = lv->first_fd;
		lv->first_fd = 0;
		errno = lv->put_err;
		if (lv->put_err)
			return level_failed(tr, 0, tracer_level_cap(lv, 0), fd);
		level_in(tr, 0, tracer_level_cap(lv, 0), fd);
	} else {
		/* None made before the load: libbpf made the live map, whose levels are preallocated (bpf/live.bpf.h). */
		lv->prealloc = true;
		if (add_level(tr))
			return -1;
	}
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

	join_putter(lv);
	if (lv->first_fd > 0)
		close(lv->first_fd);
	if (lv->outer_fd > 0)
		close(lv->outer_fd);
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
