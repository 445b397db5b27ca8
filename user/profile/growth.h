/*
 * Growth over a series of profiles (the numbered -i snapshots): each
 * stack's in-use bytes from one profile to the next, and whether it is
 * still growing or has levelled off (docs/output-formats.md, "Growth").
 */
#ifndef HT_GROWTH_H
#define HT_GROWTH_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/*
 * The snapshots that decide: a stack is "growing" when its in-use bytes
 * did not fall between any two of the last GROWTH_K and rose in one of
 * the last two steps; any fall, or two flat steps at the end, make it
 * "bounded".
 */
#define GROWTH_K 4

enum growth_class {
	GROWTH_NEW,             /* in fewer than GROWTH_K of the profiles' series so far: not judged */
	GROWTH_GROWING,
	GROWTH_BOUNDED,
};

struct growth_row {
	const struct prof_stack *s;     /* the stack as the last profile holding it has it */
	int64_t *inuse;                 /* in-use bytes in each profile (0 where absent) */
	enum growth_class cls;
	int64_t rise;                   /* in-use over the last GROWTH_K: last - first */
	double slope;                   /* rise per step (per second with growth_series's times) */
};

struct growth {
	struct growth_row *rows;        /* growing first, by slope; then bounded; then new */
	size_t n;
	size_t n_profiles;
	size_t growing, bounded;
	int64_t growing_bytes;          /* the growing stacks' in-use in the last profile */
	double *t;                      /* each profile's time in seconds, when growth_series had them; else NULL */
};

/* The class of one series of n values, and its rise over the last GROWTH_K. */
enum growth_class growth_classify(const int64_t *v, size_t n, int64_t *rise);

/*
 * The growth of every stack over profiles ps[0..n) (oldest first, each
 * sorted by frames as profiles are).  secs: each profile's time in
 * seconds (the slope is then per second), or NULL (per step).  Rows point
 * into ps, which must outlive g.  -1 on no memory.
 */
int growth_series(const struct profile *ps, size_t n, const double *secs, struct growth *g);
void growth_free(struct growth *g);

const char *growth_class_name(enum growth_class c);

#endif
