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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/array.h"

/* An executable mapping of a file, and where the same file's code is in the other map. */
struct xmap {
	uint64_t lo, hi, off;
	unsigned long dev_major, dev_minor, ino;
	const char *path;       /* into the maps text, up to the line's end */
	size_t path_len;
	int64_t shift;          /* add to a pc of this mapping to have it in the other map */
	uint64_t to_lo, to_hi;  /* the file offsets the other map has executable, of this mapping's */
	bool placed;
};

static int cmp_lo(const void *a, const void *b)
{
	const struct xmap *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The executable file mappings of a maps text, sorted by address (*n of them; NULL: none or out of memory). */
static struct xmap *exec_maps(const char *maps, size_t *n)
{
	struct xmap *v = NULL;
	size_t cap = 0;

	*n = 0;
	for (const char *p = maps ? maps : ""; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct xmap m = { 0 };
		char perms[8];
		int at = 0;
		if (sscanf(p, "%lx-%lx %7s %lx %lx:%lx %lu %n", &m.lo, &m.hi, perms, &m.off, &m.dev_major,
			   &m.dev_minor, &m.ino, &at) == 7 &&
		    at > 0 && (size_t)at < len && perms[2] == 'x' && p[at] == '/') {
			m.path = p + at;
			m.path_len = len - (size_t)at;
			if (ARRAY_RESERVE(v, cap, *n + 1, 32)) {
				free(v);
				*n = 0;
				return NULL;
			}
			v[(*n)++] = m;
		}
		p += len + (end != NULL);
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_lo);
	return v;
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
	if (a->path_len != b->path_len || memcmp(a->path, b->path, a->path_len))
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
	struct xmap *f = exec_maps(from, &nf), *t = exec_maps(to, &nt);

	*left = 0;
	if ((!f && nf) || (!t && nt)) {
		free(f);
		free(t);
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
	free(f);
	free(t);
	/* Sorted by the new frames, for profile_diff's merge join. */
	profile_normalize(p);
	return 0;
}
