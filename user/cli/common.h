/*
 * Option parsers that both commands' tables use (OPT_CALL rows): each sets
 * the field at the row's .off, so one parser serves any command's options.
 */
#ifndef HT_CLI_COMMON_H
#define HT_CLI_COMMON_H

#include "cli/opt.h"

/* -f FMT: an enum ht_format. */
int cli_set_format(void *opts, const char *arg, const struct opt *o);

/* --collapsed: the enum ht_format FMT_COLLAPSED, as -f collapsed. */
int cli_set_collapsed(void *opts, const char *arg, const struct opt *o);

/* --value V: an enum ht_value. */
int cli_set_value(void *opts, const char *arg, const struct opt *o);

/* The values of -f and --value by index, NULL past the last (struct opt's .values). */
const char *cli_format_name(int i);
const char *cli_value_name(int i);

#endif
