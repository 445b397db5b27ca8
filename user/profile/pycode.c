#include <stdlib.h>

#include "heaptrace.h"
#include "profile/pycode.h"
#include "symbolize/pyframes.h"
#include "util/array.h"

int pycode_add(struct pycode_map *m, uint64_t from, const char *func, const char *file, int firstlineno)
{
	uint64_t to = pyf_define(func, file, firstlineno);

	if (!to || ARRAY_RESERVE(m->v, m->cap, m->n + 1, 64))
		return -1;
	m->v[m->n++] = (struct pycode_pair){ from, to };
	m->sorted = 0;
	return 0;
}

static int cmp_from(const void *a, const void *b)
{
	uint64_t x = ((const struct pycode_pair *)a)->from, y = ((const struct pycode_pair *)b)->from;

	return x < y ? -1 : x > y;
}

uint64_t pycode_word(struct pycode_map *m, uint64_t pc)
{
	if (!ht_pc_python(pc))
		return pc;
	if (!m->n)
		return pc & ~HT_PY_CODE_MASK;
	if (!m->sorted) {
		qsort(m->v, m->n, sizeof(*m->v), cmp_from);
		m->sorted = 1;
	}
	struct pycode_pair key = { .from = pc & HT_PY_CODE_MASK };
	const struct pycode_pair *at = bsearch(&key, m->v, m->n, sizeof(*m->v), cmp_from);
	return (pc & ~HT_PY_CODE_MASK) | (at ? at->to : 0);
}

void pycode_free(struct pycode_map *m)
{
	free(m->v);
	*m = (struct pycode_map){ 0 };
}
