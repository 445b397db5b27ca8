/*
 * What the BPF maps cost in kernel memory, now and with every map full:
 * the kernel's fdinfo memlock, and where it counts elements (6.4+), an
 * estimate of the slab objects behind them.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracer/state.h"  /* before the skeleton: it names our shared structs */
#include "heaptrace.skel.h"
#include "tracer/drain.h"
#include "tracer/internal.h"
#include "tracer/memory.h"

/*
 * The kernel's memlock of an element of a hash map that is not
 * preallocated, beyond its key and value (round_up 8 each): the hash
 * element's header and the BPF allocator's link (56 bytes on 6.4+).  Read
 * once from a map of one element; 0 where memlock does not follow the
 * elements (before 6.4: memlock is then the full map's).
 */
static uint64_t elem_overhead(void)
{
	static uint64_t h = UINT64_MAX;

	if (h != UINT64_MAX)
		return h;
	h = 0;
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "ht_probe", 8, 8, 1, &opts);
	uint64_t k = 1, v = 0, empty = fd < 0 ? 0 : tracer_memlock_of(fd);
	if (fd >= 0 && !bpf_map_update_elem(fd, &k, &v, BPF_ANY)) {
		uint64_t one = tracer_memlock_of(fd);
		h = one > empty + 16 ? one - empty - 16 : 0;
	}
	if (fd >= 0)
		close(fd);
	return h;
}

/*
 * What the kernel takes for an element of unit bytes (its memlock): the
 * kmalloc size class it falls in, and the memory cgroup's 8-byte pointer
 * per slab object (the BPF allocator allocates with kmalloc, charged).
 */
static uint64_t slab_cost(uint64_t unit)
{
	static const uint64_t classes[] = { 8, 16, 32, 64, 96, 128, 192, 256 };
	uint64_t c = 512;

	for (size_t i = 0; i < sizeof(classes) / sizeof(*classes); i++)
		if (unit <= classes[i])
			return classes[i] + 8;
	while (c < unit && c < 8192)
		c *= 2;
	return (unit <= c ? c : (unit + 4095) / 4096 * 4096) + 8;
}

/*
 * A hash map that is not preallocated, of max entries, holding what its
 * memlock beyond base (empty) says: its memory now and full, added to now
 * and full.  Returns its number of elements.
 */
static uint64_t hash_memory(uint64_t memlock, uint64_t base, uint32_t ksz, uint32_t vsz, uint64_t max,
			    uint64_t *now, uint64_t *full)
{
	uint64_t unit = elem_overhead() + (ksz + 7) / 8 * 8 + (vsz + 7) / 8 * 8;
	uint64_t n = memlock > base ? (memlock - base) / unit : 0;

	*now += base + n * slab_cost(unit);
	*full += base + max * slab_cost(unit);
	return n;
}

/*
 * The memlock of a live level's element, preallocated (its key, value and
 * the hash element's header, and its bucket's share: one bucket an
 * element at a power of two): the difference between a level of 2048 and
 * one of 1024, read once.
 */
static uint64_t level_elem(void)
{
	static uint64_t e = UINT64_MAX;

	if (e != UINT64_MAX)
		return e;
	e = 0;
	int a = bpf_map_create(BPF_MAP_TYPE_HASH, "ht_probe", sizeof(__u64), sizeof(struct ht_block), 1024, NULL);
	int b = a < 0 ? -1 : bpf_map_create(BPF_MAP_TYPE_HASH, "ht_probe", sizeof(__u64), sizeof(struct ht_block), 2048, NULL);
	if (b >= 0) {
		uint64_t ma = tracer_memlock_of(a), mb = tracer_memlock_of(b);
		e = mb > ma ? (mb - ma) / 1024 : 0;
	}
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	return e;
}

int tracer_links(const struct tracer *tr)
{
	int n = tr->n_links;

	for (int k = 0; k < tr->n_multi; k++)
		n += tr->multi_links[k].fd >= 0;
	return n;
}

void tracer_memory(const struct tracer *tr, struct tracer_memory *m)
{
	const struct live_levels *lv = &tr->lv;
	int n = __atomic_load_n(&lv->n, __ATOMIC_ACQUIRE), i = 0;
	bool dynamic = elem_overhead() > 0;
	struct bpf_map *map;

	memset(m, 0, sizeof(*m));
	m->estimated = dynamic;
	bpf_object__for_each_map(map, tr->skel->obj) {
		uint64_t ml = tracer_memlock_of(bpf_map__fd(map)), base = tr->base_memlock ? tr->base_memlock[i] : ml;
		i++;
		m->memlock += ml;
		if (dynamic && bpf_map__type(map) == BPF_MAP_TYPE_HASH && (bpf_map__map_flags(map) & BPF_F_NO_PREALLOC)) {
			hash_memory(ml, base, bpf_map__key_size(map), bpf_map__value_size(map),
				    bpf_map__max_entries(map), &m->now, &m->max);
		} else {
			m->now += ml;
			m->max += ml;
		}
	}
	/* Preallocated levels (bpf/live.bpf.h) take all their memory when made; the others as they fill. */
	m->block_bytes = lv->prealloc ? (uint32_t)level_elem()
				      : slab_cost(elem_overhead() + sizeof(__u64) + sizeof(struct ht_block));
	for (int k = 0; k < n; k++) {
		uint64_t ml = tracer_memlock_of(lv->fds[k]);
		m->memlock += ml;
		m->live_room += lv->cap[k];
		if (dynamic && !lv->prealloc) {
			hash_memory(ml, lv->base[k], sizeof(__u64), sizeof(struct ht_block), lv->cap[k],
				    &m->live_now, &m->live_max);
		} else {
			m->live_now += ml;
			m->live_max += ml;
		}
	}
	/* Levels not made yet: their elements and buckets (16 bytes each, a power of two of them). */
	struct live_levels next = *lv;
	for (int k = n; k < HT_LIVE_LEVELS; k++) {
		uint32_t cap = tracer_level_cap(&next, k);
		uint64_t buckets = 1;
		while (buckets < cap)
			buckets *= 2;
		next.cap[k] = cap;
		/* A preallocated element's cost counts its bucket (level_elem()). */
		if (cap)
			m->live_max += 16 * (lv->prealloc ? buckets - cap : buckets) + (uint64_t)cap * m->block_bytes;
	}
	m->levels = n;
	/*
	 * The programs loaded (their memlock: the JITed image and its pages),
	 * the main object's and those of its other instances (loaded apart or
	 * later, tracer.c), and the links holding uprobes.
	 */
	struct bpf_program *prog;
	for (int k = -1; k < tr->n_more; k++)
		bpf_object__for_each_program(prog, (k < 0 ? tr->skel : tr->more[k])->obj) {
			if (bpf_program__fd(prog) >= 0) {
				m->progs_memlock += tracer_memlock_of(bpf_program__fd(prog));
				m->progs++;
			}
		}
	/* The drain's object (drain.c): its own maps, sized at their load (arrays, and ring_stacks' few). */
	uint64_t drain_maps, drain_progs;
	int drain_n;
	drain_memory(tr, &drain_maps, &drain_progs, &drain_n);
	m->memlock += drain_maps;
	m->now += drain_maps;
	m->max += drain_maps;
	m->progs_memlock += drain_progs;
	m->progs += drain_n;
	m->links = tracer_links(tr);
	m->live_blocks = tr->skel->data_live->live_count;
	m->now += m->live_now;
	m->max += m->live_max;
}
