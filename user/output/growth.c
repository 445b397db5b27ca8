#include <inttypes.h>
#include <string.h>

#include "output/growth.h"
#include "output/writers.h"

void output_growth_table(FILE *f, const struct growth *g, struct symbolizer *sym, size_t n, const char *unit)
{
	char name[256];

	fprintf(f, "growth over %zu profiles (the last %d decide): %zu growing, %" PRId64 " bytes in use; "
		"%zu bounded; %zu new\n", g->n_profiles, GROWTH_K, g->growing, g->growing_bytes, g->bounded,
		g->n - g->growing - g->bounded);
	fprintf(f, "%-8s %14s %12s  %-40s %s\n", "class", strcmp(unit, "s") ? "bytes/step" : "bytes/s", "in use",
		"last in-use values", "stack");
	for (size_t i = 0; i < g->n && i < n; i++) {
		const struct growth_row *r = &g->rows[i];
		char vals[41];
		size_t len = 0, from = g->n_profiles > GROWTH_K ? g->n_profiles - GROWTH_K : 0;
		vals[0] = 0;
		for (size_t k = from; k < g->n_profiles && len < sizeof(vals); k++) {
			int w = snprintf(vals + len, sizeof(vals) - len, "%s%" PRId64, k > from ? "," : "", r->inuse[k]);
			if (w < 0)
				break;
			len += (size_t)w;
		}
		fprintf(f, "%-8s %+14.1f %12" PRId64 "  %-40s %s\n", growth_class_name(r->cls), r->slope,
			r->inuse[g->n_profiles - 1], vals, leaf_name(r->s, sym, name, sizeof(name)));
	}
}
