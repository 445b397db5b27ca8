#include <string.h>

#include "inject/inject.h"
#include "inject/spec_stub.h"
#include "probe/plan.h"

unsigned spec_stub_flags(const struct probe *p, const struct ht_alloc_spec *s)
{
	if (p->kind == HT_SPEC_FREE)
		return STUB_FN_FREE;
	if (p->kind == HT_SPEC_RESET)
		return STUB_FN_RESET;
	/* glibc's malloc and calloc call no other entry point; realloc(NULL, n) jumps to malloc. */
	if (p->family)
		return strcmp(p->func, "malloc") && strcmp(p->func, "calloc") ? STUB_FN_NESTS : 0;
	return s->leaf ? 0 : STUB_FN_NESTS;
}
