#include <stdio.h>

#include "probe/malloc_family.h"
#include "util/log.h"

/*
 * The C allocator API as glibc, jemalloc and tcmalloc export it, said in
 * the language of --sym and --free-sym: heaptrace knows no more about
 * malloc than a user can say about an allocator of their own.
 */
static const struct {
	enum ht_spec_kind kind;
	const char *spec;
} family[] = {
	{ HT_SPEC_ALLOC, "malloc:size=arg1" },
	{ HT_SPEC_ALLOC, "calloc:size=arg1*arg2" },
	{ HT_SPEC_ALLOC, "realloc:size=arg2,free=arg1" },
	{ HT_SPEC_ALLOC, "reallocarray:size=arg2*arg3,free=arg1" },
	{ HT_SPEC_ALLOC, "posix_memalign:size=arg3,out=arg1" },
	{ HT_SPEC_ALLOC, "aligned_alloc:size=arg2" },
	{ HT_SPEC_ALLOC, "memalign:size=arg2" },
	{ HT_SPEC_ALLOC, "valloc:size=arg1" },
	{ HT_SPEC_ALLOC, "pvalloc:size=arg1,round=page" },
	{ HT_SPEC_FREE, "free:ptr=arg1" },
};

int malloc_family(int i, struct sym_spec *out)
{
	char err[256];

	if (i < 0 || i >= (int)(sizeof(family) / sizeof(family[0])))
		return -1;
	if (symspec_parse(family[i].spec, family[i].kind, out, err, sizeof(err))) {
		ht_err("the built-in malloc family: %s", err);      /* a bug in the table above */
		return -1;
	}
	return 0;
}
