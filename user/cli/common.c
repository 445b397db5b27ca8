#include "cli/common.h"
#include "output/output.h"

int cli_set_format(void *opts, const char *arg, const struct opt *o)
{
	return format_parse(arg, (enum ht_format *)((char *)opts + o->off));
}

int cli_set_collapsed(void *opts, const char *arg, const struct opt *o)
{
	(void)arg;
	*(enum ht_format *)((char *)opts + o->off) = FMT_COLLAPSED;
	return 0;
}

int cli_set_value(void *opts, const char *arg, const struct opt *o)
{
	return value_parse(arg, (enum ht_value *)((char *)opts + o->off));
}

const char *cli_format_name(int i)
{
	return i >= 0 && i < FMT_COUNT ? format_info(i)->name : NULL;
}

const char *cli_value_name(int i)
{
	return i >= 0 ? value_name(i) : NULL;
}
