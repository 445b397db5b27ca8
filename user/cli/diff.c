/* `heaptrace diff OLD NEW`: what changed per stack between two profiles. */
#include <inttypes.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/opt.h"
#include "output/growth.h"
#include "output/output.h"
#include "profile/growth.h"
#include "profile/profile.h"
#include "util/log.h"

struct diff_opts {
	enum ht_format format;
	enum ht_value value;
	uint32_t top;
	bool growth;
};

#define F(field) .off = offsetof(struct diff_opts, field)

static const struct opt diff_opts[] = {
	OPTION("format", 'f', "FMT", "top (default) | collapsed | pprof (growth only) | proto", OPT_CALL,
	  .call = cli_set_format, .values = cli_format_name, F(format), .bad = "heaptrace diff: unknown format '%s'"),
	OPTION("collapsed", 0, NULL, "same as -f collapsed", OPT_CALL, .call = cli_set_collapsed, F(format)),
	OPTION("value", 0, "V", "inuse_space (default) | inuse_objects | alloc_space | alloc_objects", OPT_CALL,
	  .call = cli_set_value, .values = cli_value_name, F(value), .bad = "heaptrace diff: unknown value '%s'"),
	OPTION("top", 0, "N", "stacks shown by -f top", OPT_U32, F(top), .min = 1,
	  .max = UINT32_MAX, .dflt = "20", .bad = "heaptrace diff: --top needs a positive count, not '%s'"),
	OPTION("growth", 0, NULL, "FILE... (the numbered -i snapshots, oldest first): which stacks keep growing", OPT_FLAG,
	  F(growth)),
	OPTION("help", 'h', NULL, "this text", OPT_HELP),
};

const struct command_opts diff_command = {
	.usage = "usage: heaptrace diff OLD NEW [-f top|collapsed|pprof|proto] [--value V]\n"
		 "       heaptrace diff --growth SNAPSHOT... [--top N]\n"
		 "What changed per stack from profile OLD to profile NEW (heap text or -f proto).\n",
	.opts = diff_opts,
	.n = sizeof(diff_opts) / sizeof(diff_opts[0]),
	.stop_at_operand = 0,
};

/* The legacy format has no negative counts: a pprof diff holds the growth. */
static void keep_growth(struct profile *d)
{
	size_t out = 0;

	for (size_t i = 0; i < d->n; i++) {
		struct ht_site *c = &d->stacks[i].c;
		if (c->inuse_objects < 0) c->inuse_objects = 0;
		if (c->inuse_bytes < 0) c->inuse_bytes = 0;
		if ((int64_t)c->alloc_objects < 0) c->alloc_objects = 0;
		if ((int64_t)c->alloc_bytes < 0) c->alloc_bytes = 0;
		if (c->inuse_bytes || c->alloc_bytes)
			d->stacks[out++] = d->stacks[i];
		else
			free(d->stacks[i].pcs);
	}
	d->n = out;
	profile_normalize(d);
}

/* --growth: each stack's in-use over the files, growing or bounded (profile/growth.h). */
static int diff_growth(char **files, int n, uint32_t top)
{
	struct profile *ps = calloc(n > 0 ? n : 1, sizeof(*ps));
	char **maps = calloc(n > 0 ? n : 1, sizeof(*maps));
	struct growth g;
	int rc = 1, got = 0;

	if (n < 2) {
		ht_err("diff --growth: needs two snapshot files or more, oldest first");
		free(ps);
		free(maps);
		return 2;
	}
	if (!ps || !maps)
		goto out;
	for (; got < n; got++)
		if (profile_read_text(files[got], &ps[got], &maps[got]))
			goto out;
	if (growth_series(ps, n, NULL, &g))
		goto out;
	struct symbolizer *sym = sym_open(maps[n - 1] ? maps[n - 1] : "");
	if (sym) {
		output_growth_table(stdout, &g, sym, top, "step");
		sym_close(sym);
		rc = fflush(stdout) ? 1 : 0;
	}
	growth_free(&g);
out:
	for (int i = 0; i < got; i++) {
		profile_free(&ps[i]);
		free(maps[i]);
	}
	free(ps);
	free(maps);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_opts o = { .format = FMT_TOP, .value = V_INUSE_SPACE };
	int first = opt_parse(&diff_command, argc, argv, &o);

	if (first < 0)
		return 2;
	if (o.growth)
		return diff_growth(argv + first, argc - first, o.top);
	if (argc - first != 2) {
		ht_err("usage: heaptrace diff OLD NEW [-f top|collapsed|pprof] [--value V]");
		return 2;
	}

	struct profile a, b, d;
	char *maps_a, *maps_b;
	int rc = 1;

	if (profile_read_text(argv[first], &a, &maps_a))
		return 1;
	if (profile_read_text(argv[first + 1], &b, &maps_b)) {
		profile_free(&a);
		free(maps_a);
		return 1;
	}
	/* Two runs, two memory maps (ASLR): the old run's frames in the new run's places first. */
	uint64_t left = 0;
	int bad = profile_rebase(&a, maps_a, maps_b, &left) || profile_diff(&a, &b, &d);
	if (left)
		ht_err("diff: %" PRIu64 " frames of %s are in objects %s does not map (rebuilt in between?): "
		       "they keep their addresses", left, argv[first], argv[first + 1]);
	/* d holds copies of what it needs: the inputs' memory goes back before the output takes its own. */
	profile_free(&a);
	profile_free(&b);
	if (!bad) {
		if (o.format == FMT_PPROF)
			keep_growth(&d);
		d.maps = maps_b;
		rc = output_write(stdout, o.format, &d, o.value, o.top) ? 1 : 0;
		if (rc)
			ht_err("cannot write the diff");
		profile_free(&d);
	}
	free(maps_a);
	free(maps_b);
	return rc;
}
