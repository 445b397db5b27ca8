#include <stdio.h>

#include "probe/stub_spec.h"

/* What the stub's eval (stub/decide.c) knows: no read of memory but a global's, made at the entry. */
static bool stub_expr(const struct ht_alloc_spec *s, const struct ht_expr *e)
{
	for (unsigned i = 0; i < e->n && i < HT_EXPR_TERMS; i++)
		for (unsigned j = 0; j < e->t[i].n && j < HT_EXPR_FACTORS; j++) {
			const struct ht_factor *f = &e->t[i].f[j];
			if (f->kind == HT_FACTOR_MEM_RET)
				return false;
			if (f->kind == HT_FACTOR_MEM && (f->value >= HT_MAX_MEM || s->mem[f->value].base))
				return false;
		}
	return true;
}

bool spec_stub_ok(const struct ht_alloc_spec *s, char *why, size_t len)
{
	/*
	 * The stub records a free or a reset at its entry, where BPF makes
	 * every read of the spec itself; an allocation after its return, when
	 * a read through an argument made at the entry (a block's header
	 * before the call frees it) can only be the stub's, which faults in
	 * the target where the argument is bad.
	 */
	for (unsigned k = 0; s->kind == HT_SPEC_ALLOC && k < s->n_mem && k < HT_MAX_MEM; k++)
		if (s->mem[k].base) {
			snprintf(why, len, "it reads *(arg%u%+lld) at its entry, which only BPF can read safely",
				 s->mem[k].base, (long long)s->mem[k].offset);
			return false;
		}
	/* The size decides sampling and the block finds the sampled set: the stub evaluates both. */
	bool size_ok = stub_expr(s, &s->size);
	if (!size_ok || !stub_expr(s, &s->ptr)) {
		snprintf(why, len, "its %s reads memory that only BPF can read safely, and the stub needs it to sample",
			 !size_ok ? "size" : "block (ptr)");
		return false;
	}
	return true;
}
