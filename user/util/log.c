#include <stdarg.h>
#include <stdio.h>

#include "util/log.h"

bool ht_verbose;

static void vline(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void vline(const char *fmt, va_list ap)
{
	/* One write per line so lines from the launched command do not interleave mid-line. */
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "heaptrace: ");

	vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	fprintf(stderr, "%s\n", buf);
}

void ht_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(fmt, ap);
	va_end(ap);
}

void ht_info(const char *fmt, ...)
{
	va_list ap;

	if (!ht_verbose)
		return;
	va_start(ap, fmt);
	vline(fmt, ap);
	va_end(ap);
}
