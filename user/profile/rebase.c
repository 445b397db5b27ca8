/*
 * heaptrace diff of two runs: a pc names code only in its own run's memory
 * map, and ASLR maps a PIE program and every library elsewhere each run.
 * So the old profile's pcs move into the new run's map, object by object:
 * a pc at file offset O of an object's executable mapping in the old run
 * becomes the address of O in the same object's mapping in the new one.
 * "The same object" is the same path, device and inode (the path alone
 * where a map has no inode: a pprof protobuf's): a file rebuilt between
 * the runs is another object, whose offsets mean other code; its frames
 * stay where they were (said once, with their count).  Then the
 * stacks compare frame by frame where they run the same code, and the new
 * run's map names them all.
 */
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/array.h"
#include "util/procfs.h"

/* An executable mapping of a file, and where the same file's code is in the other map. */
struct xmap {
	uint64_t lo, hi, off;
	unsigned long dev_major, dev_minor, ino;
	char *path;             /* owned */
	int64_t shift;          /* add to a pc of this mapping to have it in the other map */
	uint64_t to_lo, to_hi;  /* the file offsets the other map has executable, of this mapping's */
	bool placed;
};

static int cmp_lo(const void *a, const void *b)
{
	const struct xmap *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

static void free_maps(struct xmap *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

/* The executable file mappings of a maps text, sorted by address, in *out (*n of them); -1: out of memory. */
static int exec_maps(const char *maps, struct xmap **out, size_t *n)
{
	struct xmap *v = NULL;
	size_t cap = 0;
	struct map_entry e;

	*out = NULL;
	*n = 0;
	for (const char *pos = maps; maps_next(&pos, &e);) {
		if (e.perms[2] != 'x' || e.path[0] != '/')
			continue;
		char *path = strdup(e.path);
		if (!path || ARRAY_RESERVE(v, cap, *n + 1, 32)) {
			free(path);
			free_maps(v, *n);
			*n = 0;
			return -1;
		}
		v[(*n)++] = (struct xmap){ .lo = e.lo, .hi = e.hi, .off = e.offset, .dev_major = e.dev_major,
					   .dev_minor = e.dev_minor, .ino = e.ino, .path = path };
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_lo);
	*out = v;
	return 0;
}

/*
 * Does the line say which file it maps?  A pprof protobuf's mappings carry
 * no inode: read_proto.c numbers its files on device 00:01 (for libdwfl).
 */
static bool identified(const struct xmap *m)
{
	return m->ino && !(m->dev_major == 0 && m->dev_minor == 1);
}

/* The same path, and the same file where both maps say which. */
static bool same_file(const struct xmap *a, const struct xmap *b)
{
	if (strcmp(a->path, b->path))
		return false;
	return !identified(a) || !identified(b) ||
	       (a->ino == b->ino && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor);
}

/* The mapping holding pc, or NULL. */
static struct xmap *holding(struct xmap *v, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].hi <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].lo <= pc && pc < v[lo].hi ? &v[lo] : NULL;
}

/* pc moved into the other map, or as it was; *left counts the frames of objects the other map has not. */
static uint64_t moved(struct xmap *v, size_t n, uint64_t pc, uint64_t *left)
{
	const struct xmap *m = holding(v, n, pc);

	if (!m)
		return pc;      /* not a file's code: anonymous, [vdso], or not in the map */
	uint64_t off = pc - m->lo + m->off;
	if (m->placed && off >= m->to_lo && off < m->to_hi)
		return pc + m->shift;
	(*left)++;
	return pc;
}

int profile_rebase(struct profile *p, const char *from, const char *to, uint64_t *left)
{
	size_t nf, nt;
	struct xmap *f, *t;

	*left = 0;
	if (exec_maps(from, &f, &nf))
		return -1;
	if (exec_maps(to, &t, &nt)) {
		free_maps(f, nf);
		return -1;
	}
	for (size_t i = 0; i < nf; i++) {
		for (size_t k = 0; k < nt && !f[i].placed; k++) {
			uint64_t a = f[i].off, b = f[i].off + (f[i].hi - f[i].lo);
			uint64_t c = t[k].off, d = t[k].off + (t[k].hi - t[k].lo);
			if (!same_file(&f[i], &t[k]) || b <= c || d <= a)
				continue;
			f[i].placed = true;
			f[i].shift = (int64_t)(t[k].lo - t[k].off) - (int64_t)(f[i].lo - f[i].off);
			f[i].to_lo = a > c ? a : c;
			f[i].to_hi = b < d ? b : d;
		}
	}
	for (size_t s = 0; s < p->n; s++)
		for (uint32_t j = 0; j < p->stacks[s].depth; j++)
			p->stacks[s].pcs[j] = moved(f, nf, p->stacks[s].pcs[j], left);
	for (size_t s = 0; s < p->n_unmatched; s++)
		for (uint32_t j = 0; j < p->unmatched[s].depth; j++)
			p->unmatched[s].pcs[j] = moved(f, nf, p->unmatched[s].pcs[j], left);
	free_maps(f, nf);
	free_maps(t, nt);
	/* Sorted by the new frames, for profile_diff's merge join. */
	profile_normalize(p);
	return 0;
}
