/*
 * Command-line options declared once: one table per command drives
 * parsing, validation, defaults and the --help text, so that adding an
 * option touches its table row and the code that uses its value.
 */
#ifndef HT_OPT_H
#define HT_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum opt_kind {
	OPT_FLAG,       /* bool, set when present */
	OPT_U32,        /* uint32_t in [min, max] */
	OPT_SECONDS,    /* double > 0 */
	OPT_BYTES,      /* uint64_t in [min, max], suffixes K, M, G (binary) */
	OPT_STRING,     /* const char *, the argument itself */
	OPT_CHOICE,     /* int: the index of the value in choices */
	OPT_CALL,       /* call(opts, arg): the option's own parser */
	OPT_HELP,       /* print the command's help and exit 0 */
	OPT_VERSION,    /* print the version and exit 0 */
};

struct opt {
	const char *name;               /* long name, without "--" */
	char key;                       /* short option letter, or 0 */
	const char *arg;                /* the value's name in --help; NULL: takes no value */
	const char *help;               /* "\n" starts a continuation line */
	enum opt_kind kind;
	size_t off;                     /* where the value goes in the command's options */
	uint64_t min, max;              /* OPT_U32, OPT_BYTES */
	const char *dflt;               /* set before parsing, as if given; shown in --help for numbers */
	const char *const *choices;     /* OPT_CHOICE: NULL-terminated */
	/* OPT_CALL: 0, or -1 when the value is bad (with .bad unset: the message is printed). */
	int (*call)(void *opts, const char *arg, const struct opt *o);
	const char *bad;                /* a bad value's message; %s is the value */
	/* OPT_CALL: its values by index, NULL past the last (the man page and completion list them), or NULL. */
	const char *(*values)(int i);
};

/* A table row: name, short letter, value name, help, kind, then designated fields (.off, .min, ...). */
#define OPTION(name_, key_, arg_, help_, kind_, ...) \
	{ .name = (name_), .key = (key_), .arg = (arg_), .help = (help_), .kind = (kind_), __VA_ARGS__ }

struct command_opts {
	const char *usage;              /* the lines before the option list */
	const char *epilogue;           /* after it, or NULL */
	const struct opt *opts;
	size_t n;
	/* Options stop at the first operand (the traced command's own options are its business). */
	int stop_at_operand;
};

/*
 * Parse argv into *out by the table.  Returns the index of the first
 * operand, or -1 after a one-line error (exit status 2 for the caller).
 */
int opt_parse(const struct command_opts *c, int argc, char **argv, void *out);

/* The --help text of a command. */
void opt_help(const struct command_opts *c, FILE *f);

/*
 * A command's table as tab-separated records, for the build's man page and
 * shell completion generators (dist/): "command NAME", "usage LINE",
 * "epilogue LINE", then per row "option LONG KEY ARG DEFAULT" ("-" for
 * none), "choice VALUE" and "help LINE" lines.
 */
void opt_dump(const char *name, const struct command_opts *c, FILE *f);

/* BYTES[K|M|G] (binary multiples) in [min, max], for OPT_CALL parsers: 0, or -1 when it is not. */
int opt_parse_bytes(const char *s, uint64_t *out, uint64_t min, uint64_t max);

/* A one-line usage error, "heaptrace: MSG (see heaptrace --help)"; returns -1. */
int opt_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
