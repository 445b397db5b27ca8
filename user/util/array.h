/*
 * Growable arrays: a pointer, a count the caller keeps and a capacity.
 * ARRAY_RESERVE(v, cap, n + 1, 64) before v[n++] = x; as libbpf's
 * libbpf_ensure_mem().
 */
#ifndef HT_ARRAY_H
#define HT_ARRAY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Room for need elements of elem_sz bytes in the array *arrp (a pointer
 * to any pointer) of *cap elements: the capacity doubles, from first when
 * there is none, until it holds need, so that n appends cost O(n).  0, or
 * -1 when memory runs out, with the array and *cap as they were.
 */
/* qsort()'s and bsearch()'s order of uint64_t elements. */
static inline int array_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static inline int array_reserve(void *arrp, size_t *cap, size_t elem_sz, size_t need, size_t first)
{
	size_t c = *cap ? *cap : first;
	void *v;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -1;
		c *= 2;
	}
	if (c > SIZE_MAX / elem_sz)
		return -1;
	/* Through memcpy: the caller's pointer has its own type, not void *. */
	memcpy(&v, arrp, sizeof(v));
	if (!(v = realloc(v, c * elem_sz)))
		return -1;
	memcpy(arrp, &v, sizeof(v));
	*cap = c;
	return 0;
}

#define ARRAY_RESERVE(arr, cap, need, first) array_reserve(&(arr), &(cap), sizeof(*(arr)), (need), (first))

#endif
