/* readelf's CFI rows for test_unwind_table (readelf_cfi.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readelf_cfi.h"

static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap ? 2 * *cap : 1024;
	v = realloc(v, *cap * size);
	if (!v)
		abort();
	return v;
}

/* readelf's columns: "rsp+8", "c-16", "u", "s", "r9", "exp", "v-16" ... */
static struct xrow x_rule(char **tok, int ntok, int cfa_col, int rbp_col, int ra_col)
{
	struct xrow x = { .r = { .cfa = HT_CFA_UNKNOWN, .rbp = HT_RBP_UNKNOWN } };
	const char *cfa = tok[cfa_col], *ra = ra_col < ntok ? tok[ra_col] : "u";
	const char *rbp = rbp_col >= 0 && rbp_col < ntok ? tok[rbp_col] : "u";
	long off;

	if (!strcmp(ra, "u")) {
		x.r.cfa = HT_CFA_END;
		return x;
	}
	if (!strcmp(ra, "exp") && !strcmp(cfa, "exp"))
		x.all_exp = true;
	if (strcmp(ra, "c-8"))
		return x;
	if (!strcmp(cfa, "exp")) {
		x.exp = true;
		return x;
	}
	if (strncmp(cfa, "rsp", 3) && strncmp(cfa, "rbp", 3))
		return x;
	off = strtol(cfa + 3, NULL, 10);
	if (off < INT32_MIN || off > INT32_MAX)
		return x;
	x.r.cfa = cfa[1] == 's' ? HT_CFA_RSP : HT_CFA_RBP;
	x.r.cfa_off = off;
	if (!strcmp(rbp, "u") || !strcmp(rbp, "s")) {
		x.r.rbp = HT_RBP_SAME;
	} else if (rbp[0] == 'c' && (off = strtol(rbp + 1, NULL, 10)) >= INT16_MIN && off <= INT16_MAX) {
		x.r.rbp = HT_RBP_CFA;
		x.r.rbp_off = off;
	}
	return x;
}

/* Split on blanks, dropping readelf's "(name)" after a register number. */
static int split(char *line, char **tok, int max)
{
	int n = 0;

	for (char *s = strtok(line, " \t\n"); s && n < max; s = strtok(NULL, " \t\n")) {
		if (s[0] != '(')
			tok[n++] = s;
	}
	return n;
}

bool read_readelf(const char *path, struct xcfi *x)
{
	char cmd[PATH_MAX + 64], line[4096], *tok[64];
	int cfa_col = -1, rbp_col = -1, ra_col = -1;
	struct xfde *cur = NULL;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -wN --debug-dump=frames-interp '%s' 2>/dev/null", path);
	if (!(p = popen(cmd, "r")))
		return false;
	while (fgets(line, sizeof(line), p)) {
		bool is_fde = strstr(line, " FDE ") != NULL, is_cie = strstr(line, " CIE ") != NULL;
		char *pc = strstr(line, "pc=");
		int n;

		if (is_fde || is_cie) {
			x->fdes = grow(x->fdes, &x->capfdes, x->nfdes, sizeof(*x->fdes));
			cur = &x->fdes[x->nfdes++];
			*cur = (struct xfde){ .first = x->nrows, .cie = strtoull(line, NULL, 16) };
			if (is_fde && pc) {
				char *cie = strstr(line, "cie=");

				cur->cie = cie ? strtoull(cie + 4, NULL, 16) : 0;
				cur->start = strtoull(pc + 3, &pc, 16);
				cur->end = strtoull(pc + 2, NULL, 16);
			} else {
				char *aug = strchr(line, '"'), *aug_end = aug ? strchr(aug + 1, '"') : NULL;

				cur->start = cur->end = UINT64_MAX;     /* a CIE: its row only */
				cur->signal = aug_end && memchr(aug, 'S', aug_end - aug);
			}
			cfa_col = rbp_col = ra_col = -1;
			continue;
		}
		if (strstr(line, "ZERO terminator") || !cur || (n = split(line, tok, 64)) < 2)
			continue;
		if (!strcmp(tok[0], "LOC")) {
			for (int i = 1; i < n; i++) {
				if (!strcmp(tok[i], "CFA"))
					cfa_col = i;
				else if (!strcmp(tok[i], "rbp"))
					rbp_col = i;
				else if (!strcmp(tok[i], "ra"))
					ra_col = i;
			}
			continue;
		}
		if (cfa_col < 0 || ra_col < 0)
			continue;
		x->rows = grow(x->rows, &x->caprows, x->nrows, sizeof(*x->rows));
		x->rows[x->nrows] = x_rule(tok, n, cfa_col, rbp_col, ra_col);
		x->rows[x->nrows++].pc = strtoull(tok[0], NULL, 16);
		cur->n++;
	}
	return pclose(p) == 0 && x->nfdes > 0;
}

static bool x_same(const struct xrow *a, const struct xrow *b)
{
	return a->exp == b->exp && a->all_exp == b->all_exp && a->r.cfa == b->r.cfa && a->r.cfa_off == b->r.cfa_off &&
	       a->r.rbp == b->r.rbp && a->r.rbp_off == b->r.rbp_off;
}

static void x_push(struct xrow *out, size_t *n, uint64_t pc, struct xrow r)
{
	while (*n && out[*n - 1].pc >= pc)
		(*n)--;
	if (*n && x_same(&out[*n - 1], &r))
		return;
	r.pc = pc;
	out[(*n)++] = r;
}

static int xfde_cmp(const void *a, const void *b)
{
	const struct xfde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

static const struct xrow *x_cie_row(const struct xcfi *x, uint64_t cie)
{
	for (size_t i = 0; i < x->nfdes; i++) {
		if (x->fdes[i].start == UINT64_MAX && x->fdes[i].cie == cie && x->fdes[i].n)
			return &x->rows[x->fdes[i].first];
	}
	return NULL;
}

static bool x_cie_signal(const struct xcfi *x, uint64_t cie)
{
	for (size_t i = 0; i < x->nfdes; i++) {
		if (x->fdes[i].start == UINT64_MAX && x->fdes[i].cie == cie)
			return x->fdes[i].signal;
	}
	return false;
}

/* The table unwind_table.h describes, from readelf's rows. */
size_t x_table(struct xcfi *x, struct xrow *out)
{
	struct xrow gap = { .r = { .cfa = HT_CFA_UNKNOWN, .rbp = HT_RBP_UNKNOWN } };
	size_t n = 0;

	for (size_t i = 0; i < x->nfdes; i++) {
		struct xfde *f = &x->fdes[i];

		if (f->start == UINT64_MAX)
			continue;
		/*
		 * readelf prints a signal frame's rules as "exp" and not their
		 * offsets: the row is a signal frame's (the fixtures check the
		 * offsets).
		 */
		if (x_cie_signal(x, f->cie)) {
			for (size_t k = 0; k < f->n; k++) {
				struct xrow *r = &x->rows[f->first + k];

				if (r->all_exp)
					r->r = (struct ht_unwind_row){ .cfa = HT_CFA_SIGNAL, .rbp = HT_RBP_UNKNOWN };
			}
		}
		if (!f->n) {    /* no instructions: readelf prints no row, the CIE's holds */
			const struct xrow *c = x_cie_row(x, f->cie);

			if (!c)
				continue;
			x->rows = grow(x->rows, &x->caprows, x->nrows, sizeof(*x->rows));
			c = x_cie_row(x, f->cie);
			x->rows[x->nrows] = *c;
			x->rows[x->nrows].pc = f->start;
			f->first = x->nrows++;
			f->n = 1;
		}
	}
	qsort(x->fdes, x->nfdes, sizeof(*x->fdes), xfde_cmp);
	for (size_t i = 0; i < x->nfdes; i++) {
		struct xfde *f = &x->fdes[i];
		uint64_t next = UINT64_MAX, limit;

		if (f->start == UINT64_MAX || f->start == f->end || (i && f->start == f[-1].start))
			continue;
		for (size_t j = i + 1; j < x->nfdes; j++) {
			if (x->fdes[j].start != f->start) {
				next = x->fdes[j].start;
				break;
			}
		}
		limit = f->end < next ? f->end : next;
		for (size_t k = 0; k < f->n; k++) {
			if (x->rows[f->first + k].pc < limit)
				x_push(out, &n, x->rows[f->first + k].pc, x->rows[f->first + k]);
		}
		if (f->end < next)
			x_push(out, &n, f->end, gap);
	}
	return n;
}

const struct xrow *x_find(const struct xrow *v, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &v[lo - 1] : NULL;
}
