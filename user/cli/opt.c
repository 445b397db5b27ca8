/*
 * The option engine.  getopt_long does the scanning (so abbreviations,
 * "--opt=value" and "--" behave as in every GNU tool); its tables are
 * built here from the command's struct opt rows.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/opt.h"
#include "util/log.h"
#include "util/version.h"

#define MAX_OPTS 64
#define HELP_COLUMN 24

int opt_bad(const char *fmt, ...)
{
	char *msg;
	va_list ap;

	/* Whole, however long the value: ht_err shortens its long words. */
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	ht_err("%s (see heaptrace --help)", msg ? msg : fmt);
	free(msg);
	return -1;
}

static int parse_u32(const char *s, uint32_t *out, uint64_t min, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);

	/* strtoul takes " 5", "+5" and "-5" (wrapped): a number is digits only. */
	if (!isdigit((unsigned char)*s) || errno || *end || v < min || v > max || v > UINT32_MAX)
		return -1;
	*out = v;
	return 0;
}

/* BYTES[K|M|G], binary multiples: "512K" is 524288. */
static int parse_bytes(const char *s, uint64_t *out, uint64_t min, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;

	if (!isdigit((unsigned char)*s) || errno)
		return -1;
	if (*end && !end[1]) {
		const char *units = "kKmMgG", *u = strchr(units, *end);
		if (!u)
			return -1;
		shift = 10 * (1 + (u - units) / 2);
		end++;
	}
	if (*end || v > max >> shift || (uint64_t)v << shift < min)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int opt_parse_bytes(const char *s, uint64_t *out, uint64_t min, uint64_t max)
{
	return parse_bytes(s, out, min, max);
}

static int parse_seconds(const char *s, double *out)
{
	char *end;

	/* strtod also takes " 1", "+1", "0x10", "inf" and "1e3": seconds are written 2, 0.5 or .5. */
	if (!*s || s[strspn(s, "0123456789.")])
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !(*out > 0) || *out > 1e9 ? -1 : 0;
}

static int parse_choice(const char *s, int *out, const char *const *choices)
{
	for (int i = 0; choices[i]; i++)
		if (!strcmp(s, choices[i])) {
			*out = i;
			return 0;
		}
	return -1;
}

/* One option's value into its field; -1 after the error is printed. */
static int apply(const struct command_opts *c, const struct opt *o, const char *arg, void *out)
{
	void *field = (char *)out + o->off;
	int err = 0;

	switch (o->kind) {
	case OPT_FLAG:
		*(bool *)field = true;
		return 0;
	case OPT_U32:
		err = parse_u32(arg, field, o->min, o->max);
		break;
	case OPT_SECONDS:
		err = parse_seconds(arg, field);
		break;
	case OPT_BYTES:
		err = parse_bytes(arg, field, o->min, o->max);
		break;
	case OPT_STRING:
		*(const char **)field = arg;
		return 0;
	case OPT_CHOICE:
		err = parse_choice(arg, field, o->choices);
		break;
	case OPT_CALL:
		err = o->call(out, arg, o);
		if (err && !o->bad)
			return -1;
		break;
	case OPT_HELP:
		opt_help(c, stdout);
		exit(0);
	case OPT_VERSION:
		printf("heaptrace %s\n", HEAPTRACE_VERSION);
		exit(0);
	}
	return err ? opt_bad(o->bad, arg) : 0;
}

int opt_parse(const struct command_opts *c, int argc, char **argv, void *out)
{
	struct option longopts[MAX_OPTS + 1] = { { 0 } };
	char shorts[2 * MAX_OPTS + 4], *s = shorts;
	int ch;

	/* '+': stop at the first operand; ':': a missing value is told apart from an unknown option. */
	if (c->stop_at_operand)
		*s++ = '+';
	*s++ = ':';
	for (size_t i = 0; i < c->n && i < MAX_OPTS; i++) {
		const struct opt *o = &c->opts[i];
		longopts[i] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, 256 + (int)i };
		if (o->key) {
			*s++ = o->key;
			if (o->arg)
				*s++ = ':';
		}
		if (o->dflt && apply(c, o, o->dflt, out))
			return -1;
	}
	*s = '\0';
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		const struct opt *o = NULL;

		if (ch == ':')
			return opt_bad("option %s needs a value", argv[optind - 1]);
		if (ch >= 256)
			o = &c->opts[ch - 256];
		for (size_t i = 0; !o && ch != '?' && i < c->n; i++)
			if (c->opts[i].key == ch)
				o = &c->opts[i];
		if (!o)
			return opt_bad("unknown option '%s'", argv[optind - 1]);
		if (apply(c, o, optarg, out))
			return -1;
	}
	return optind;
}

/* --help shows the default of numbers; the others say theirs in the help text. */
static bool shows_default(const struct opt *o)
{
	return o->dflt && (o->kind == OPT_U32 || o->kind == OPT_BYTES);
}

void opt_help(const struct command_opts *c, FILE *f)
{
	fputs(c->usage, f);
	fputc('\n', f);
	for (size_t i = 0; i < c->n; i++) {
		const struct opt *o = &c->opts[i];
		char left[64];
		int n = snprintf(left, sizeof(left), "  %c%c%c --%s%s%s", o->key ? '-' : ' ', o->key ? o->key : ' ',
				 o->key ? ',' : ' ', o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "%s%*s", left, n < HELP_COLUMN ? HELP_COLUMN - n : 1, "");
		for (const char *p = o->help;;) {
			const char *nl = strchrnul(p, '\n');
			fprintf(f, "%.*s", (int)(nl - p), p);
			if (!*nl)
				break;
			p = nl + 1;
			fprintf(f, "\n%*s", HELP_COLUMN, "");
		}
		if (shows_default(o))
			fprintf(f, " (default %s)", o->dflt);
		fputc('\n', f);
	}
	if (c->epilogue)
		fprintf(f, "\n%s", c->epilogue);
}

static void dump_lines(const char *tag, const char *text, FILE *f)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchrnul(p, '\n');
		fprintf(f, "%s\t%.*s\n", tag, (int)(nl - p), p);
		p = *nl ? nl + 1 : nl;
	}
}

void opt_dump(const char *name, const struct command_opts *c, FILE *f)
{
	fprintf(f, "command\t%s\n", name);
	dump_lines("usage", c->usage, f);
	dump_lines("epilogue", c->epilogue, f);
	for (size_t i = 0; i < c->n; i++) {
		const struct opt *o = &c->opts[i];
		fprintf(f, "option\t%s\t%c\t%s\t%s\n", o->name, o->key ? o->key : '-', o->arg ? o->arg : "-",
			shows_default(o) ? o->dflt : "-");
		for (int j = 0; o->kind == OPT_CHOICE && o->choices[j]; j++)
			fprintf(f, "choice\t%s\n", o->choices[j]);
		for (int j = 0; o->kind == OPT_CALL && o->values && o->values(j); j++)
			fprintf(f, "choice\t%s\n", o->values(j));
		dump_lines("help", o->help, f);
	}
}
