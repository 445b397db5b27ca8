/*
 * --limit-peak and --limit-leak: a traced program that goes over a limit
 * makes heaptrace fail (HT_EXIT_LIMIT), so that CI can gate on its heap
 * the way it gates on LeakSanitizer or valgrind --error-exitcode.
 */
#ifndef HT_LIMITS_H
#define HT_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"

/* heaptrace's exit status when a limit was exceeded (1: heaptrace failed, 2: bad usage). */
#define HT_EXIT_LIMIT 23     /* LeakSanitizer's: a heap check failed */

/* Stacks named on stderr per exceeded limit. */
#define LIMIT_STACKS 5

struct limits {
	bool peak_set, leak_set;        /* given: --limit-leak 0 is a limit */
	uint64_t peak, leak;            /* bytes; exceeded when strictly above */
};

/*
 * One process's profile against the limits: each one exceeded is said on
 * stderr with the stacks that hold most of it.  true when one was.
 */
bool limits_check(const struct limits *l, const struct profile *p);

#endif
