/*
 * A reader of a process's event ring for the tests of the stub's side
 * (scenario ringstub), standing in for heaptrace's drain: it maps the
 * target's ring (memfd:heaptrace-ring, through /proc/PID/map_files),
 * consumes as the drain does (published slots in order, a stack with all
 * its frames, slots freed for the next lap, tail, alive, the wakes), until
 * the process is gone, and then prints what it read, per size of block:
 *
 *   size S allocs A frees F stacks K sent N other_tid O main_tid M
 *
 * (K: distinct stack hashes of those allocations, N: HT_EV_STACK slots
 * of those hashes, O: frees by another thread than the allocation's, M:
 * allocations by the thread whose id is the process's), then
 * "realloc moved M zero Z", "events E skips S unknown_stacks U unwalked W
 * bad_frees B bad_stacks T gave_up G lost L".  Not heaptrace: only for tests.
 *
 *   t_ringdrain PID
 */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../bpf/heaptrace.h"

#define MASK (HT_RING_SLOTS - 1ull)
#define SIZES 128               /* sizes 1000 .. 1127, and 100021 and 0 in their own rows */
#define LIVE (1u << 20)

struct row {
	uint64_t allocs, frees, sent, other_tid, main_tid;
	uint64_t hashes[8];
	unsigned nhash;
};

static struct row rows[SIZES + 2];
static struct { uint64_t ptr, size; uint32_t tid; } live[LIVE];
static uint64_t sent_hash[1 << 16];
static unsigned sent_count[1 << 16];
static unsigned nsent;
static uint64_t events, skips, unknown_stacks, unwalked, bad_frees, bad_stacks, moved, zero;
static uint64_t ptr_1021;
static pid_t pid;

static struct row *row_of(uint64_t size)
{
	if (size >= 1000 && size < 1000 + SIZES)
		return &rows[size - 1000];
	if (size == 100021)
		return &rows[SIZES];
	return size == 0 ? &rows[SIZES + 1] : NULL;
}

static unsigned slot_of(uint64_t ptr)
{
	unsigned i = (unsigned)((ptr >> 4) * 0x9E3779B97F4A7C15ull >> 44) & (LIVE - 1);

	while (live[i].ptr && live[i].ptr != ptr)
		i = (i + 1) & (LIVE - 1);
	return i;
}

static void live_del(uint64_t ptr)
{
	unsigned i = slot_of(ptr), j = i;

	if (!live[i].ptr)
		return;
	live[i].ptr = 0;
	/* Move back what followed it, so lookups still find it. */
	for (;;) {
		j = (j + 1) & (LIVE - 1);
		if (!live[j].ptr)
			return;
		typeof(live[0]) e = live[j];
		live[j].ptr = 0;
		live[slot_of(e.ptr)] = e;
	}
}

static int sent_find(uint64_t h)
{
	for (unsigned i = 0; i < nsent; i++)
		if (sent_hash[i] == h)
			return (int)i;
	return -1;
}

static void account(const struct ht_ev *e, const struct ht_ev *next, uint32_t n)
{
	events++;
	if (e->kind == HT_EV_SKIP) {
		skips++;
		return;
	}
	if (e->kind == HT_EV_STACK) {
		/* The frames must hash to what the slot says: they are what the stub walked. */
		uint64_t h = HT_STACK_HASH_SEED;
		for (uint32_t i = 0; i < e->depth; i++)
			h = ht_stack_hash_step(h, ((const struct ht_ev_pcs *)&next[i / HT_RING_PCS])->pcs[i % HT_RING_PCS]);
		if (ht_stack_hash_end(h) != e->hash || HT_RING_STACK_SLOTS(e->depth) != n - 1)
			bad_stacks++;
		int k = sent_find(e->hash);
		if (k < 0 && nsent < (1 << 16)) {
			k = (int)nsent++;
			sent_hash[k] = e->hash;
		}
		if (k >= 0)
			sent_count[k]++;
		return;
	}
	if (e->kind == HT_EV_FREE) {
		unsigned i = slot_of(e->ptr);
		if (!live[i].ptr)
			return;         /* a block of before (libc's start), or untracked */
		struct row *r = row_of(live[i].size);
		if (r) {
			r->frees++;
			r->other_tid += e->tid != live[i].tid;
		}
		live_del(e->ptr);
		return;
	}
	if (e->kind != HT_EV_ALLOC)
		return;
	struct row *r = row_of(e->size);
	if (e->old) {
		unsigned i = slot_of(e->old);
		if (e->size == 100021 && e->old == ptr_1021 && e->ptr && e->ptr != e->old)
			moved++;
		if (e->size == 0 && !e->ptr && live[i].ptr && live[i].size == 100021)
			zero++;
		if (live[i].ptr)
			live_del(e->old);
		else if (row_of(e->size))
			bad_frees++;
	}
	/* A signal handler's event that could not wait for its stack's walk to be the BPF side's: no stack. */
	if (e->ptr && !e->stack && (e->flags & HT_STUB_UNWALKED))
		unwalked++;
	else if (e->ptr && sent_find(e->stack) < 0)
		unknown_stacks++;
	if (!r)
		goto keep;
	r->allocs++;
	r->main_tid += e->tid == (uint32_t)pid;
	unsigned j;
	for (j = 0; j < r->nhash && r->hashes[j] != e->stack; j++)
		;
	if (j == r->nhash && j < 8)
		r->hashes[r->nhash++] = e->stack;
	if (e->size == 1021)
		ptr_1021 = e->ptr;
keep:
	if (e->ptr) {
		unsigned i = slot_of(e->ptr);
		live[i].ptr = e->ptr;
		live[i].size = e->size;
		live[i].tid = e->tid;
	}
}

static int gone(void)
{
	char path[64], st[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	st[n] = '\0';
	char *p = strrchr(st, ')');
	return !p || p[2] == 'Z' || p[2] == 'X';
}

int main(int argc, char **argv)
{
	char path[128], line[512];
	uint64_t lo = 0, hi = 0;

	if (argc != 2)
		return 2;
	pid = atoi(argv[1]);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *m = fopen(path, "r");
	while (m && fgets(line, sizeof(line), m))
		if (strstr(line, "memfd:heaptrace-ring"))
			sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi);
	if (m)
		fclose(m);
	if (!lo) {
		fprintf(stderr, "t_ringdrain: no ring in PID %d\n", pid);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, lo, hi);
	int fd = open(path, O_RDWR);
	struct ht_ring *h = fd < 0 ? MAP_FAILED : mmap(NULL, HT_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		perror(path);
		return 1;
	}
	struct ht_ev *slots = (struct ht_ev *)((char *)h + HT_RING_OFF);
	uint64_t pos = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
	printf("ready\n");
	fflush(stdout);
	for (int last = 0;;) {
		int any = 0;
		for (;;) {
			struct ht_ev *e = &slots[pos & MASK];
			if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != pos + 1)
				break;
			uint32_t n = e->kind == HT_EV_STACK ? 1 + HT_RING_STACK_SLOTS(e->depth) : 1;
			struct ht_ev next[HT_RING_STACK_SLOTS(HT_MAX_STACK_DEPTH)];
			uint32_t k;
			for (k = 1; k < n; k++) {
				struct ht_ev *c = &slots[(pos + k) & MASK];
				if (__atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) != pos + k + 1)
					break;
				next[k - 1] = *c;
			}
			if (k < n)
				break;
			account(e, next, n);
			for (k = 0; k < n; k++)
				__atomic_store_n(&slots[(pos + k) & MASK].seq, pos + k + HT_RING_SLOTS, __ATOMIC_RELEASE);
			pos += n;
			__atomic_store_n(&h->tail, pos, __ATOMIC_RELEASE);
			any = 1;
		}
		__atomic_add_fetch(&h->alive, 1, __ATOMIC_RELEASE);
		if (any && __atomic_load_n(&h->waiting, __ATOMIC_SEQ_CST))
			syscall(SYS_futex, &h->tail, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
		if (last && !any)
			break;
		last = gone();
		if (any || last)
			continue;
		uint32_t b = __atomic_load_n(&h->bell, __ATOMIC_SEQ_CST);
		__atomic_store_n(&h->sleeping, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&slots[pos & MASK].seq, __ATOMIC_ACQUIRE) != pos + 1) {
			struct timespec to = { 0, HT_RING_PERIOD_MS * 1000000l };
			syscall(SYS_futex, &h->bell, FUTEX_WAIT, b, &to, NULL, 0);
		}
		__atomic_store_n(&h->sleeping, 0, __ATOMIC_SEQ_CST);
	}
	for (unsigned s = 0; s < SIZES + 2; s++) {
		struct row *r = &rows[s];
		if (!r->allocs && !r->frees)
			continue;
		for (unsigned j = 0; j < r->nhash; j++) {
			int k = sent_find(r->hashes[j]);
			r->sent += k >= 0 ? sent_count[k] : 0;
		}
		printf("size %u allocs %" PRIu64 " frees %" PRIu64 " stacks %u sent %" PRIu64 " other_tid %" PRIu64
		       " main_tid %" PRIu64 "\n", s < SIZES ? 1000 + s : s == SIZES ? 100021 : 0, r->allocs, r->frees,
		       r->nhash, r->sent, r->other_tid, r->main_tid);
	}
	printf("realloc moved %" PRIu64 " zero %" PRIu64 "\n", moved, zero);
	printf("events %" PRIu64 " skips %" PRIu64 " unknown_stacks %" PRIu64 " unwalked %" PRIu64 " bad_frees %" PRIu64 " bad_stacks %" PRIu64
	       " gave_up %" PRIu64 " lost %" PRIu64 "\n", events, skips, unknown_stacks, unwalked, bad_frees, bad_stacks, (uint64_t)h->gave_up,
	       (uint64_t)h->lost);
	return 0;
}
