#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <bpf/bpf.h>

#include "util/array.h"
#include "util/elfobj.h"
#include "util/log.h"
#include "util/procfs.h"
#include "util/time.h"
#include "tracer/tracer.h"
#include "unwind/procs.h"
#include "unwind/table.h"

/* Libraries a process may dlopen later: room for this many rows beyond the initial tables. */
#define HEADROOM_ROWS (512 * 1024)
/*
 * Programs executed later (u->execs): room for a compiler's (gcc's cc1 and
 * its libraries hold 600,000 rows, cc1plus more) and what it runs, 32 MiB.
 */
#define EXEC_HEADROOM_ROWS (2048 * 1024)

/* Array map elements are 8-byte aligned: a row takes 16 bytes in the mmapped array. */
struct map_row {
	struct ht_unwind_row r;
	uint32_t pad;
};

/*
 * p_vaddr - p_offset of the first executable segment (file offsets to ELF
 * addresses), and the program interpreter: ld.so's frames are in every
 * stack of a constructor or a dlopen().
 */
static int exec_delta(const char *path, struct ht_unwind_object *obj, char *interp, size_t len)
{
	struct elfobj o;
	size_t n;
	int rc = -1;

	*interp = '\0';
	if (elfobj_open(&o, path, false))
		return -1;
	if (!elf_getphdrnum(o.elf, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(o.elf, i, &ph))
				continue;
			if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
				/* As the kernel's mm->start_code and end_code are, for the executable. */
				if (rc || ph.p_vaddr < obj->text_lo)
					obj->text_lo = ph.p_vaddr;
				if (rc || ph.p_vaddr + ph.p_filesz > obj->text_hi)
					obj->text_hi = ph.p_vaddr + ph.p_filesz;
				if (rc)
					obj->delta = ph.p_vaddr - ph.p_offset;
				rc = 0;
			}
			if (ph.p_type == PT_INTERP && ph.p_filesz < len && !elfobj_read(&o, ph.p_vaddr, interp, ph.p_filesz))
				interp[ph.p_filesz] = '\0';
		}
	}
	elfobj_close(&o);
	return rc;
}

/* The kernel's dev_t, as the BPF side reads it from the inode's superblock. */
static struct ht_unwind_object_key object_key(dev_t dev, ino_t ino)
{
	return (struct ht_unwind_object_key){ .dev = ((uint64_t)major(dev) << 20) | minor(dev), .ino = ino };
}

/* The key of path as its mappings show it (on overlayfs, not as stat() does). */
static int mapped_key(const char *path, struct ht_unwind_object_key *key)
{
	dev_t dev;
	ino_t ino;

	if (!path_map_id(path, &dev, &ino))
		return -1;
	*key = object_key(dev, ino);
	return 0;
}

int unwind_object_key(const char *path, struct ht_unwind_object_key *key)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return -1;
	*key = object_key(st.st_dev, st.st_ino);
	return 0;
}

static struct unwind_object *find(struct unwind *u, const char *path, const struct ht_unwind_object_key *key)
{
	for (size_t i = 0; i < u->n; i++)
		if (!strcmp(u->objs[i].path, path) ||
		    (key && u->objs[i].key.dev == key->dev && u->objs[i].key.ino == key->ino))
			return &u->objs[i];
	return NULL;
}

/* The object's rows into the mapped array, and its entry into the objects map. */
static int publish(struct unwind *u, struct unwind_object *o)
{
	if (!o->rows)
		return 0;
	if (o->obj.row_begin + (size_t)o->obj.row_count > u->capacity) {
		u->no_room++;
		ht_info("no room for the unwind table of %s: its frames unwind by frame pointer", o->path);
	} else {
		struct map_row *m = (struct map_row *)u->map + o->obj.row_begin;
		for (uint32_t i = 0; i < o->obj.row_count; i++)
			m[i].r = o->rows[i];
		o->loaded = true;
		if (bpf_map_update_elem(tracer_unwind_objects_fd(u->tr), &o->key, &o->obj, BPF_ANY)) {
			ht_err("cannot load the unwind table of %s: %s", o->path, strerror(errno));
			return -1;
		}
		/*
		 * On overlayfs a mapping's inode (bpf_find_vma's, unwind.bpf.h) is
		 * the layer's, not stat()'s (the executable's, and a spec's): the
		 * object goes under both keys.
		 */
		struct ht_unwind_object_key mk;
		if (!mapped_key(o->path, &mk) && (mk.dev != o->key.dev || mk.ino != o->key.ino))
			bpf_map_update_elem(tracer_unwind_objects_fd(u->tr), &mk, &o->obj, BPF_ANY);
	}
	return 0;
}

static void add_one(struct unwind *u, const char *path)
{
	struct ht_unwind_object_key key;
	struct unwind_table t;
	struct ht_unwind_object obj = { 0 };
	char interp[4096];

	if (unwind_object_key(path, &key))
		return;
	if (find(u, path, &key))
		return;
	if (ARRAY_RESERVE(u->objs, u->cap, u->n + 1, 32))
		return;
	struct unwind_object *o = &u->objs[u->n];
	memset(o, 0, sizeof(*o));
	if (!(o->path = strdup(path)))
		return;
	o->key = key;
	u->n++;
	/* Objects without CFI stay listed (row_count 0) so they are not compiled again. */
	if (exec_delta(path, &obj, interp, sizeof(interp)))
		return;
	if (*interp) {
		size_t at = o - u->objs;
		add_one(u, interp);
		o = &u->objs[at];       /* the list may have moved */
	}
	if (unwind_table_get(path, &t))
		return;
	if (!t.n) {
		unwind_table_free(&t);
		return;
	}
	if (t.from_cache)
		u->from_cache++;
	o->rows = t.rows;
	o->cached = t.from_cache;
	obj.row_begin = u->rows;
	obj.row_count = t.n;
	o->obj = obj;
	u->rows += t.n;
	if (u->map)
		publish(u, o);
}

void unwind_add_objects(struct unwind *u, char *const *paths, int n)
{
	double t0 = now_ms();

	for (int i = 0; i < n; i++)
		add_one(u, paths[i]);
	u->build_ms += now_ms() - t0;
}

size_t unwind_capacity(const struct unwind *u)
{
	return u->rows + (u->execs ? EXEC_HEADROOM_ROWS : HEADROOM_ROWS);
}

int unwind_load(struct unwind *u, struct tracer *tr)
{
	if (u->map)
		munmap(u->map, u->capacity * sizeof(struct map_row));
	u->tr = tr;
	u->code_maps = 0;       /* a reloaded tracer's caches are empty: fill them again */
	u->capacity = tracer_unwind_capacity(tr);
	u->map = mmap(NULL, u->capacity * sizeof(struct map_row), PROT_READ | PROT_WRITE, MAP_SHARED,
		      tracer_unwind_rows_fd(tr), 0);
	if (u->map == MAP_FAILED) {
		u->map = NULL;
		ht_err("cannot map the unwind table array: %s", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < u->n; i++)
		if (publish(u, &u->objs[i]))
			return -1;
	size_t with = 0;
	for (size_t i = 0; i < u->n; i++)
		with += u->objs[i].obj.row_count > 0;
	ht_info("unwind tables: %zu of %zu objects, %zu rows (%zu from the cache), built in %.1f ms", with, u->n,
		u->rows, u->from_cache, u->build_ms);
	return 0;
}

/* FNV-1a, continued from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (const unsigned char *c = p; n--; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return h;
}

/*
 * The code mappings of maps whose objects are known, in address order, as
 * the BPF side's cache holds them: at most max.
 */
static uint32_t modules(struct unwind *u, const char *maps, const char *root, struct ht_unwind_module *mods,
			size_t *objs, uint32_t max)
{
	struct map_entry e;
	uint32_t n = 0;

	while (maps_next(&maps, &e) && n < max) {
		char path[4400];

		if (e.perms[2] != 'x' || e.path[0] != '/' || strstr(e.path, " (deleted)"))
			continue;
		snprintf(path, sizeof(path), "%s%s", root, e.path);
		const struct unwind_object *o = find(u, path, NULL);
		struct ht_unwind_object_key key;
		/* Another process's view of a known file (/proc/PID/root/...): by inode. */
		if (!o && !unwind_object_key(path, &key))
			o = find(u, path, &key);
		if (!o)
			continue;
		if (objs)
			objs[n] = (size_t)(o - u->objs);
		struct ht_unwind_module *m = &mods[n++];
		memset(m, 0, sizeof(*m));
		m->start = e.lo;
		m->end = e.hi;
		if (o->loaded) {
			m->bias = e.lo - e.offset - o->obj.delta;
			m->row_begin = o->obj.row_begin;
			m->row_count = o->obj.row_count;
		}
		m->ready = 1;
	}
	return n;
}

/* Object i's rows into the share, at the same indices as in the BPF array, once. */
static bool share_rows(struct unwind *u, struct unwind_share *sh, size_t i)
{
	const struct unwind_object *o = &u->objs[i];

	if (!o->loaded || o->obj.row_begin + (size_t)o->obj.row_count > sh->rows)
		return false;
	if (i >= sh->copied_cap) {
		size_t cap = u->cap > i ? u->cap : i + 1;
		bool *c = realloc(sh->copied, cap * sizeof(*c));
		if (!c)
			return false;
		memset(c + sh->copied_cap, 0, (cap - sh->copied_cap) * sizeof(*c));
		sh->copied = c;
		sh->copied_cap = cap;
	}
	if (!sh->copied[i]) {
		memcpy((char *)sh->map + HT_SHARE_ROWS_OFF + (size_t)o->obj.row_begin * sizeof(struct ht_unwind_row),
		       o->rows, (size_t)o->obj.row_count * sizeof(struct ht_unwind_row));
		sh->copied[i] = true;
	}
	return true;
}

/*
 * A process's code mappings as the index of its tables (the stub's
 * walk), their rows copied first: the index not in force is written, then
 * made the one in force.  A walk reading the other one meanwhile sees gen
 * move and gives up.  Modules whose rows did not fit the mapping are left
 * out (the BPF side walks their frames).
 */
static void share_index(struct unwind *u, uint32_t slot)
{
	struct unwind_share *us = &u->shares[slot];

	if (!us->map || !us->maps)
		return;
	struct ht_share *sh = us->map;
	uint32_t gen = __atomic_load_n(&sh->gen, __ATOMIC_RELAXED);
	struct ht_share_index *ix = &sh->index[(gen + 1) & 1];
	const struct ht_share_index *now = &sh->index[gen & 1];
	static struct ht_unwind_module mods[HT_SHARE_MODULES];
	static size_t objs[HT_SHARE_MODULES];
	uint32_t n = modules(u, us->maps, us->root, mods, objs, HT_SHARE_MODULES), k = 0;

	for (uint32_t i = 0; i < n; i++)
		if (!mods[i].row_count || share_rows(u, us, objs[i]))
			mods[k++] = mods[i];
	/*
	 * The index in force already: gen stays.  A move of gen sends every
	 * walk under way to a record site (the ring's ordered fallback) and
	 * empties the walks' caches of rows; the first refresh of the maps
	 * after the stub's install (the loader's libraries, which the install
	 * indexed already) did that to one run of t_paths in ~30.
	 */
	if (now->n == k && !memcmp(now->mods, mods, k * sizeof(mods[0])))
		return;
	memcpy(ix->mods, mods, k * sizeof(mods[0]));
	ix->n = k;
	__atomic_store_n(&sh->gen, gen + 1, __ATOMIC_RELEASE);
}

static void keep_maps(struct unwind_share *us, const char *maps, const char *root)
{
	char *m = strdup(maps), *r = strdup(root);

	if (!m || !r) {
		free(m);
		free(r);
		return;
	}
	free(us->maps);
	free(us->root);
	us->maps = m;
	us->root = r;
}

static void share_drop(struct unwind_share *us)
{
	free(us->maps);
	free(us->root);
	free(us->copied);
	memset(us, 0, sizeof(*us));
}

void unwind_share(struct unwind *u, uint32_t slot, struct ht_share *map, uint32_t rows, const char *maps,
		  const char *root)
{
	slot %= HT_MAX_PROCS;
	struct unwind_share *us = &u->shares[slot];

	/* Another mapping, or none: none of the rows copied are in it. */
	if (us->map != map) {
		free(us->copied);
		us->copied = NULL;
		us->copied_cap = 0;
	}
	us->map = map;
	us->rows = map ? rows : 0;
	if (map && maps)
		keep_maps(us, maps, root);
	share_index(u, slot);
}

/*
 * The target's code mappings straight into its BPF cache (slot 0): its
 * stacks then need no bpf_find_vma, which fails (-EBUSY) while another
 * thread holds the mmap lock, as malloc's arena growth does all the time
 * in a busy threaded program.  Mappings met later still go through it.
 */
static void populate(struct unwind *u, uint32_t slot, const char *maps, const char *root)
{
	static struct ht_unwind_proc p;

	memset(&p, 0, sizeof(p));
	p.n = modules(u, maps, root, p.mods, NULL, HT_UNWIND_MAX_MODULES);
	tracer_unwind_set(u->tr, slot, &p);
	if (slot < HT_MAX_PROCS) {
		keep_maps(&u->shares[slot], maps, root);
		share_index(u, slot);
	}
}

void unwind_maps_changed(struct unwind *u, const char *maps, const char *root)
{
	struct map_entry e;
	size_t before = u->n, rows = u->rows;
	uint64_t code = 0xcbf29ce484222325ull;
	double t0 = now_ms();
	const char *maps_start = maps;

	if (!u->map || !maps)
		return;
	while (maps_next(&maps, &e)) {
		char path[4400];

		if (e.perms[2] != 'x' || e.path[0] != '/')
			continue;
		/* Which file's code is where: what the BPF side caches per process. */
		code = fnv(code, &e.lo, sizeof(e.lo));
		code = fnv(code, &e.hi, sizeof(e.hi));
		code = fnv(code, &e.offset, sizeof(e.offset));
		code = fnv(code, e.path, strlen(e.path) + 1);
		if (strstr(e.path, " (deleted)"))
			continue;
		snprintf(path, sizeof(path), "%s%s", root, e.path);
		if (!find(u, path, NULL))
			add_one(u, path);
	}
	bool moved = code != u->code_maps;
	u->code_maps = code;
	if (u->rows == rows && !moved)
		return;
	if (u->rows != rows)
		u->build_ms += now_ms() - t0;
	/*
	 * Stacks may have met new objects already and cached them as
	 * tableless, and a known object (no new table) may now be where the
	 * caches hold another one (dlclose, dlopen): start them afresh.
	 */
	/*
	 * The target's cache is replaced by the map's view in one update, not
	 * emptied first: an empty cache sends every stack to bpf_find_vma.
	 */
	populate(u, 0, maps_start, root);
	tracer_unwind_flush(u->tr, 1);
	if (u->rows == rows)
		return;
	/* Only now: whoever reads this line may rely on the tables being in force. */
	ht_info("unwind tables for %zu objects mapped since the start (%zu rows)", u->n - before, u->rows - rows);
}

void unwind_exec(struct unwind *u, uint32_t slot, char *const *paths, int n, const char *maps, const char *root)
{
	size_t before = u->n, rows = u->rows;

	if (!u->map)
		return;
	unwind_add_objects(u, paths, n);
	if (u->rows != rows)
		ht_info("unwind tables for %zu objects of a new program (%zu rows)", u->n - before, u->rows - rows);
	/* The old program's code mappings go from the slot's cache; the new one's are in it. */
	populate(u, slot, maps, root);
}

void unwind_free(struct unwind *u)
{
	for (size_t i = 0; i < u->n; i++) {
		free(u->objs[i].path);
		free(u->objs[i].rows);
	}
	free(u->objs);
	for (uint32_t k = 0; k < HT_MAX_PROCS; k++)
		share_drop(&u->shares[k]);
	if (u->map)
		munmap(u->map, u->capacity * sizeof(struct map_row));
	memset(u, 0, sizeof(*u));
}
