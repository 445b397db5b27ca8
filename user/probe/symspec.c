#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/symspec.h"

static struct ht_expr single(enum ht_factor_kind kind, unsigned long long value)
{
	struct ht_expr e = { .n = 1 };

	e.t[0].n = 1;
	e.t[0].f[0].kind = kind;
	e.t[0].f[0].value = value;
	return e;
}

static struct ht_expr expr_arg(unsigned n) { return single(HT_FACTOR_ARG, n); }
static struct ht_expr expr_const(unsigned long long v) { return single(HT_FACTOR_CONST, v); }
static struct ht_expr expr_ret(void) { return single(HT_FACTOR_RET, 0); }

static size_t ident_len(const char *s)
{
	size_t n = 0;

	if (!isalpha((unsigned char)*s) && *s != '_')
		return 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == '.' || s[n] == '$')
		n++;
	return n;
}

static bool is_arg(const char *s, size_t n)
{
	return n >= 4 && !strncmp(s, "arg", 3) && strspn(s + 3, "0123456789") == n - 3;
}

/*
 * A read of the target's memory, after its '*': (argN[+-N]), (ret[+-N]),
 * (GLOBAL[+-N]) or GLOBAL.  8 bytes, read at the entry (argN, a global:
 * a block's header before the call frees it, the current context as the
 * call starts) or at the return (ret).  Advances *p.
 */
static int parse_deref(const char **p, struct ht_factor *f, bool ret_ok, const char *whole, struct sym_spec *out,
		       char *err, size_t len)
{
	const char *s = *p;
	bool paren = *s == '(';
	unsigned long long off = 0;
	unsigned base = 0;

	if (paren)
		s++;
	while (isspace((unsigned char)*s))
		s++;
	size_t n = ident_len(s);
	if (!n) {
		snprintf(err, len, "'%s': bad expression: '*' reads memory at (argN+N), (ret+N) or a global, not at '%s'",
			 whole, *s ? s : "the end");
		return -1;
	}
	const char *name = s;
	bool ret = n == 3 && !strncmp(s, "ret", 3), arg = is_arg(s, n);
	if ((ret || arg) && !paren) {
		snprintf(err, len, "'%s': bad expression: write *(%.*s) to read memory at %.*s", whole, (int)n, s,
			 (int)n, s);
		return -1;
	}
	if (arg) {
		base = strtoul(s + 3, NULL, 10);
		if (base < 1 || base > 6) {
			snprintf(err, len, "'%s': %.*s is out of range: arguments are arg1 to arg6", whole, (int)n, s);
			return -1;
		}
	}
	if (ret && !ret_ok) {
		snprintf(err, len, "'%s': a free or reset has no return value: ret cannot be used", whole);
		return -1;
	}
	s += n;
	while (isspace((unsigned char)*s))
		s++;
	if (paren && (*s == '+' || *s == '-')) {
		char sign = *s++, *end;
		while (isspace((unsigned char)*s))
			s++;
		errno = 0;
		off = isdigit((unsigned char)*s) ? strtoull(s, &end, 0) : 0;
		if (!isdigit((unsigned char)*s) || errno || isalnum((unsigned char)*end)) {
			snprintf(err, len, "'%s': bad expression: *(%.*s%c...) takes a number", whole, (int)n, name, sign);
			return -1;
		}
		if (sign == '-')
			off = -off;
		s = end;
		while (isspace((unsigned char)*s))
			s++;
	}
	if (paren) {
		if (*s != ')') {
			snprintf(err, len, "'%s': bad expression: expected ')' at '%s'", whole, *s ? s : "the end");
			return -1;
		}
		s++;
	}
	if (ret) {
		f->kind = HT_FACTOR_MEM_RET;
		f->value = off;
	} else {
		struct ht_alloc_spec *sp = &out->spec;
		if (sp->n_mem == HT_MAX_MEM) {
			snprintf(err, len, "'%s': more than %d reads of memory at the entry", whole, HT_MAX_MEM);
			return -1;
		}
		sp->mem[sp->n_mem].base = base;
		sp->mem[sp->n_mem].offset = off;
		if (!base)
			out->mem_sym[sp->n_mem] = strndup(name, n);
		f->kind = HT_FACTOR_MEM;
		f->value = sp->n_mem++;
	}
	*p = s;
	return 0;
}

/* One factor: argN, ret, a decimal/hex number or a read of memory.  Advances *p. */
static int parse_factor(const char **p, struct ht_factor *f, bool ret_ok, const char *whole, struct sym_spec *out,
			char *err, size_t len)
{
	const char *s = *p;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '*') {
		s++;
		if (parse_deref(&s, f, ret_ok, whole, out, err, len))
			return -1;
	} else if (!strncmp(s, "arg", 3) && isdigit((unsigned char)s[3])) {
		char *end;
		unsigned long n = strtoul(s + 3, &end, 10);
		if (n < 1 || n > 6) {
			snprintf(err, len, "'%s': %.*s is out of range: arguments are arg1 to arg6", whole,
				 (int)(end - s), s);
			return -1;
		}
		f->kind = HT_FACTOR_ARG;
		f->value = n;
		s = end;
	} else if (!strncmp(s, "ret", 3) && !isalnum((unsigned char)s[3])) {
		if (!ret_ok) {
			snprintf(err, len, "'%s': a free or reset has no return value: ret cannot be used", whole);
			return -1;
		}
		f->kind = HT_FACTOR_RET;
		s += 3;
	} else if (isdigit((unsigned char)*s)) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 0);
		if (errno || isalnum((unsigned char)*end)) {
			snprintf(err, len, "'%s': bad number in the expression", whole);
			return -1;
		}
		f->kind = HT_FACTOR_CONST;
		f->value = v;
		s = end;
	} else {
		snprintf(err, len, "'%s': bad expression: expected argN, ret, a number or *(...) at '%s'", whole,
			 *s ? s : "the end");
		return -1;
	}
	while (isspace((unsigned char)*s))
		s++;
	*p = s;
	return 0;
}

/* whole: the full SPEC, for messages. */
static int parse_expr(const char *text, const char *whole, struct ht_expr *e, bool ret_ok, struct sym_spec *out,
		      char *err, size_t len)
{
	const char *p = text;

	memset(e, 0, sizeof(*e));
	for (;;) {
		if (e->n == HT_EXPR_TERMS) {
			snprintf(err, len, "'%s': more than %d terms in an expression", whole, HT_EXPR_TERMS);
			return -1;
		}
		struct ht_term *t = &e->t[e->n++];
		for (;;) {
			if (t->n == HT_EXPR_FACTORS) {
				snprintf(err, len, "'%s': more than %d factors in a term", whole, HT_EXPR_FACTORS);
				return -1;
			}
			if (parse_factor(&p, &t->f[t->n++], ret_ok, whole, out, err, len))
				return -1;
			if (*p != '*')
				break;
			p++;
		}
		if (*p == '+') {
			p++;
			continue;
		}
		if (*p) {
			snprintf(err, len, "'%s': bad expression: unexpected '%s'", whole, p);
			return -1;
		}
		return 0;
	}
}

/*
 * The fields of a spec.  free, out and round describe what the malloc
 * family does beyond "returns a block": realloc frees its argument when it
 * succeeds (free=arg1), posix_memalign returns the block through a pointer
 * (out=arg1), pvalloc rounds the size up to a page (round=page).
 */
enum field { F_SIZE, F_OBJECTS, F_PTR, F_ARENA, F_FREE, F_OUT, F_ROUND, F_COUNT };
static const char *const field_names[F_COUNT] = { "size", "objects", "ptr", "arena", "free", "out", "round" };

/* argN alone, for the fields that name an argument register. */
static int parse_arg(const char *v, const char *whole, const char *field, __u8 *out, char *err, size_t len)
{
	char *end;
	unsigned long n;

	if (strncmp(v, "arg", 3) || !isdigit((unsigned char)v[3]) || (n = strtoul(v + 3, &end, 10)) < 1 || n > 6 ||
	    *end) {
		snprintf(err, len, "'%s': %s takes an argument, arg1 to arg6, not '%s'", whole, field, v);
		return -1;
	}
	*out = n;
	return 0;
}

int symspec_parse(const char *text, enum ht_spec_kind kind, struct sym_spec *out, char *err, size_t len)
{
	const char *colon = strchr(text, ':');
	size_t head = colon ? (size_t)(colon - text) : strlen(text);
	char *name = strndup(text, head), *at = strchr(name, '@');

	memset(out, 0, sizeof(*out));
	if (at) {
		*at = '\0';
		out->object = strdup(at + 1);
	}
	out->name = name;
	if (!*name || (at && !*out->object)) {
		snprintf(err, len, "'%s': %s", text, !*name ? "no symbol name" : "no object after '@'");
		goto bad;
	}
	/* ELF symbol names as compilers write them (C, mangled C++ and Rust, versions after '@'). */
	if (name[strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.$")]) {
		snprintf(err, len, "'%s': '%s' is not a symbol name", text, name);
		goto bad;
	}
	if (colon && !colon[1]) {
		snprintf(err, len, "'%s': nothing after ':' (FIELD=EXPR,...)", text);
		goto bad;
	}

	struct ht_alloc_spec *s = &out->spec;
	s->kind = kind;
	if (kind == HT_SPEC_ALLOC) {
		s->size = expr_arg(1);
		s->objects = expr_const(1);
		s->ptr = expr_ret();
	} else if (kind == HT_SPEC_FREE) {
		s->ptr = expr_arg(1);
	} else {
		s->arena = expr_arg(1);
	}

	/* Which fields each kind takes. */
	const bool allowed[3][F_COUNT] = {
		[HT_SPEC_ALLOC] = { true, true, true, true, true, true, true },
		[HT_SPEC_FREE] = { [F_PTR] = true },
		[HT_SPEC_RESET] = { [F_ARENA] = true },
	};
	char *fields = colon ? strdup(colon + 1) : NULL, *rest = fields, *f;
	bool seen[F_COUNT] = { false };
	/* strsep, not strtok: "a,,b" has an empty field, which is a mistake to report. */
	while ((f = rest ? strsep(&rest, ",") : NULL)) {
		char *eq = strchr(f, '=');
		int which = -1;

		if (!*f) {
			snprintf(err, len, "'%s': an empty field (FIELD=EXPR,...)", text);
			free(fields);
			goto bad;
		}

		if (eq)
			*eq = '\0';
		for (int i = 0; i < F_COUNT; i++)
			if (!strcmp(f, field_names[i]))
				which = i;
		if (which < 0 || !allowed[kind][which]) {
			snprintf(err, len, "'%s': unknown field '%s' (%s takes %s)", text, f,
				 kind == HT_SPEC_ALLOC ? "--sym" : kind == HT_SPEC_FREE ? "--free-sym" : "--reset-sym",
				 kind == HT_SPEC_ALLOC ? "size, objects, ptr, arena, free, out and round" :
				 kind == HT_SPEC_FREE ? "ptr" : "arena");
			free(fields);
			goto bad;
		}
		if (seen[which]) {
			snprintf(err, len, "'%s': field '%s' given twice", text, f);
			free(fields);
			goto bad;
		}
		seen[which] = true;
		if (!eq || !eq[1]) {
			snprintf(err, len, "'%s': field '%s' needs a value (%s=EXPR)", text, f, f);
			free(fields);
			goto bad;
		}
		int bad;
		if (which == F_FREE) {
			bad = parse_arg(eq + 1, text, f, &s->old_ptr_arg, err, len);
		} else if (which == F_OUT) {
			bad = parse_arg(eq + 1, text, f, &s->out_ptr_arg, err, len);
		} else if (which == F_ROUND) {
			s->page_round = !strcmp(eq + 1, "page");
			bad = !s->page_round;
			if (bad)
				snprintf(err, len, "'%s': round takes page, not '%s'", text, eq + 1);
		} else {
			struct ht_expr *e = which == F_SIZE ? &s->size : which == F_OBJECTS ? &s->objects :
					    which == F_PTR ? &s->ptr : &s->arena;
			bad = parse_expr(eq + 1, text, e, kind == HT_SPEC_ALLOC, out, err, len);
		}
		if (bad) {
			free(fields);
			goto bad;
		}
	}
	free(fields);
	return 0;
bad:
	symspec_free(out);
	return -1;
}

void symspec_free(struct sym_spec *s)
{
	free(s->name);
	free(s->object);
	s->name = s->object = NULL;
	for (int k = 0; k < HT_MAX_MEM; k++) {
		free(s->mem_sym[k]);
		s->mem_sym[k] = NULL;
	}
}
