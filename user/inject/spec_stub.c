#include <stdio.h>
#include <string.h>

#include "inject/inject.h"
#include "inject/spec_stub.h"
#include "probe/plan.h"
#include "util/log.h"

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

int spec_stub_guard(struct inject *in, struct probe_plan *plan, bool installing)
{
	const struct probe *left = NULL;
	int given = 0, n = 0;

	for (int k = 0; k < plan->n && !left; k++)
		if (!plan->probes[k].stub)
			left = &plan->probes[k];
	if (!left)
		return 0;
	for (int i = 0; i < in->n; i++) {
		struct probe *p = &plan->probes[in->fns[i].probe];

		if (!p->family && (spec_stub_flags(p, &plan->specs[p->spec]) & STUB_FN_NESTS)) {
			ht_info("fast path: %s keeps its uprobes: it is no leaf, and %s keeps its uprobes: a call of it "
				"made inside %s would not be known as nested", p->func, left->func, p->func);
			p->stub = false;
			p->given_back = installing;
			given++;
			continue;
		}
		in->fns[n++] = in->fns[i];
	}
	in->n = n;
	return given;
}
