/*
 * The spec language and the built-in malloc family written in it: each
 * function's descriptor must be exactly the one the BPF programs were
 * given when the family was a table of argument numbers (sizes, the block
 * realloc frees, posix_memalign's out pointer, pvalloc's page rounding).
 */
#include <string.h>

#include "check.h"
#include "probe/malloc_family.h"
#include "probe/presets.h"

static struct ht_expr factor(enum ht_factor_kind kind, unsigned long long v)
{
	struct ht_expr e = { .n = 1 };

	e.t[0].n = 1;
	e.t[0].f[0].kind = kind;
	e.t[0].f[0].value = v;
	return e;
}

static struct ht_expr product(unsigned a, unsigned b)
{
	struct ht_expr e = factor(HT_FACTOR_ARG, a);

	e.t[0].n = 2;
	e.t[0].f[1].kind = HT_FACTOR_ARG;
	e.t[0].f[1].value = b;
	return e;
}

/* The descriptor of an allocator: size from one argument or a product, objects=1, ptr=ret. */
static struct ht_alloc_spec alloc(unsigned size_arg, unsigned mul_arg, unsigned old_ptr, unsigned out_ptr, int page)
{
	struct ht_alloc_spec s;

	memset(&s, 0, sizeof(s));
	s.kind = HT_SPEC_ALLOC;
	s.size = mul_arg ? product(size_arg, mul_arg) : factor(HT_FACTOR_ARG, size_arg);
	s.objects = factor(HT_FACTOR_CONST, 1);
	s.ptr = factor(HT_FACTOR_RET, 0);
	s.old_ptr_arg = old_ptr;
	s.out_ptr_arg = out_ptr;
	s.page_round = page;
	return s;
}

int main(void)
{
	struct { const char *name; struct ht_alloc_spec want; } family[] = {
		{ "malloc", alloc(1, 0, 0, 0, 0) },
		{ "calloc", alloc(1, 2, 0, 0, 0) },
		{ "realloc", alloc(2, 0, 1, 0, 0) },
		{ "reallocarray", alloc(2, 3, 1, 0, 0) },
		{ "posix_memalign", alloc(3, 0, 0, 1, 0) },
		{ "aligned_alloc", alloc(2, 0, 0, 0, 0) },
		{ "memalign", alloc(2, 0, 0, 0, 0) },
		{ "valloc", alloc(1, 0, 0, 0, 0) },
		{ "pvalloc", alloc(1, 0, 0, 0, 1) },
		{ "free", { .kind = HT_SPEC_FREE } },
	};
	size_t n = sizeof(family) / sizeof(family[0]);
	struct sym_spec s;
	char err[256];
	int i;

	family[n - 1].want.ptr = factor(HT_FACTOR_ARG, 1);
	for (i = 0; !malloc_family(i, &s); i++) {
		bool known = i < (int)n && !strcmp(s.name, family[i].name);
		check(known, "malloc family %d is %s (want %s)", i, s.name, i < (int)n ? family[i].name : "none");
		if (known)
			check(!memcmp(&s.spec, &family[i].want, sizeof(s.spec)), "%s: the descriptor of the old table",
			      s.name);
		symspec_free(&s);
	}
	check(i == (int)n, "the family has %d functions (want %zu)", i, n);

	/* The new fields, as a user writes them. */
	check(!symspec_parse("xrealloc:size=arg3,free=arg2", HT_SPEC_ALLOC, &s, err, sizeof(err)) &&
		      s.spec.old_ptr_arg == 2, "free=arg2 names the block a resize frees");
	symspec_free(&s);
	check(!symspec_parse("getbuf:out=arg4,size=arg1", HT_SPEC_ALLOC, &s, err, sizeof(err)) &&
		      s.spec.out_ptr_arg == 4, "out=arg4: the block is returned through *arg4");
	symspec_free(&s);
	check(symspec_parse("f:free=arg7", HT_SPEC_ALLOC, &s, err, sizeof(err)) && strstr(err, "arg1 to arg6"),
	      "free=arg7 is refused: %s", err);
	check(symspec_parse("f:free=arg1+arg2", HT_SPEC_ALLOC, &s, err, sizeof(err)) && strstr(err, "free takes"),
	      "free= takes one argument, not an expression: %s", err);
	check(symspec_parse("f:round=word", HT_SPEC_ALLOC, &s, err, sizeof(err)) && strstr(err, "round takes page"),
	      "round takes page only: %s", err);
	check(symspec_parse("f:free=arg1", HT_SPEC_FREE, &s, err, sizeof(err)) && strstr(err, "unknown field"),
	      "--free-sym takes no free= field: %s", err);

	/*
	 * Every preset's specs parse (the table is only parsed when a user asks
	 * for it), with the roles a reader of --preset list expects.
	 */
	const char *text, *option;
	enum ht_spec_kind kind;
	int n_python = 0, n_jemalloc = 0;
	for (i = 0; !preset_spec("python", i, &text, &kind, &option); i++, n_python++) {
		check(!symspec_parse(text, kind, &s, err, sizeof(err)), "preset python: '%s' parses: %s", text, err);
		check(!strncmp(s.name, "PyObject_", 9) || !strncmp(s.name, "PyMem_", 6), "preset python: %s", s.name);
		if (strstr(s.name, "Realloc"))
			check(s.spec.old_ptr_arg == 1, "preset python: %s frees its arg1", s.name);
		symspec_free(&s);
	}
	check(n_python == 8, "preset python has 8 functions (%d)", n_python);
	for (i = 0; !preset_spec("jemalloc", i, &text, &kind, &option); i++, n_jemalloc++) {
		check(!symspec_parse(text, kind, &s, err, sizeof(err)), "preset jemalloc: '%s' parses: %s", text, err);
		if (!strcmp(s.name, "xallocx"))
			check(s.spec.old_ptr_arg == 1 && s.spec.ptr.t[0].f[0].kind == HT_FACTOR_ARG &&
				      s.spec.size.t[0].f[0].kind == HT_FACTOR_RET,
			      "preset jemalloc: xallocx replaces arg1 by itself, at the size it returns");
		symspec_free(&s);
	}
	check(n_jemalloc == 5, "preset jemalloc has 5 functions (%d)", n_jemalloc);
	check(preset_spec("nosuch", 0, &text, &kind, &option) == -1, "no preset nosuch");
	return check_summary();
}
