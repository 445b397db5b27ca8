#include <string.h>

#include "inject/state.h"
#include "inject/spec_stub.h"
#include "probe/plan.h"

/* expr as k * argA * argB (0: a factor of 1): one term of numbers and at most two arguments. */
static bool product_form(const struct ht_expr *e, uint8_t *a, uint8_t *b, uint64_t *k)
{
	if (e->n != 1 || e->t[0].n > HT_EXPR_FACTORS)
		return false;
	*a = *b = 0;
	*k = 1;
	for (unsigned j = 0; j < e->t[0].n; j++) {
		const struct ht_factor *f = &e->t[0].f[j];
		if (f->kind == HT_FACTOR_CONST)
			*k *= f->value;
		else if (f->kind == HT_FACTOR_ARG && f->value >= 1 && f->value <= 6 && (!*a || !*b))
			*(*a ? b : a) = f->value;
		else
			return false;
	}
	return true;
}

void spec_stub_fill(struct stub_fn *fn, const struct probe *p, const struct ht_alloc_spec *s)
{
	uint8_t a, b;
	uint64_t k;

	if (p->kind == HT_SPEC_FREE)
		fn->flags = STUB_FN_FREE | (s->free_wraps ? STUB_FN_WRAPS : 0);
	else if (p->kind == HT_SPEC_RESET)
		fn->flags = STUB_FN_RESET;
	else if (p->family)
		/* glibc's malloc and calloc call no other entry point; realloc(NULL, n) jumps to malloc. */
		fn->flags = strcmp(p->func, "malloc") && strcmp(p->func, "calloc") ? STUB_FN_NESTS : 0;
	else
		fn->flags = s->leaf ? 0 : STUB_FN_NESTS;
	if (s->size_at_return)
		fn->flags |= STUB_FN_SIZE_AT_RET;
	if (s->page_round)
		fn->flags |= STUB_FN_PAGE_ROUND;
	if (p->kind == HT_SPEC_ALLOC && product_form(&s->size, &a, &b, &k)) {
		fn->flags |= STUB_FN_SIZE_FAST;
		fn->size_a = a;
		fn->size_b = b;
		fn->size_k = k;
	}
	if (p->kind == HT_SPEC_FREE && product_form(&s->ptr, &a, &b, &k) && a && !b && k == 1) {
		fn->flags |= STUB_FN_PTR_FAST;
		fn->ptr_arg = a;
	}
	fn->small_max = p->small_max;
	if (p->gil)
		fn->flags |= STUB_FN_GIL;
	if (p->forwards)
		fn->flags |= STUB_FN_FORWARD;
	fn->old_arg = s->old_ptr_arg;
	fn->out_arg = s->out_ptr_arg;
	fn->n_mem = s->n_mem;
}
