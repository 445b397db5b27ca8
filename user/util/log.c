#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

bool ht_verbose;

/*
 * A word (a run of non-blanks: a path, a --sym spec, an option's value)
 * longer than WORD_MAX bytes is shown as its first WORD_HEAD and last
 * WORD_TAIL bytes around "...": a 5,000-character value is recognisable
 * and the reason after it still on the line, where cutting the line would
 * lose both.
 */
#define WORD_MAX 240
#define WORD_HEAD 150
#define WORD_TAIL 60

static bool utf8_cont(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

/* Shortens the long words of s in place (the result is never longer). */
static void shorten_words(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		size_t n = strcspn(r, " \t\n");
		if (n > WORD_MAX) {
			size_t head = WORD_HEAD, tail = n - WORD_TAIL;
			while (head > 0 && utf8_cont(r[head]))
				head--;
			while (tail < n && utf8_cont(r[tail]))
				tail++;
			memmove(w, r, head);
			memcpy(w + head, "...", 3);
			memmove(w + head + 3, r + tail, n - tail);
			w += head + 3 + (n - tail);
		} else {
			memmove(w, r, n);
			w += n;
		}
		r += n;
		size_t blanks = strspn(r, " \t\n");
		memmove(w, r, blanks);
		w += blanks;
		r += blanks;
	}
	*w = '\0';
}

static void vline(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static void vline(const char *fmt, va_list ap)
{
	char buf[1024], *msg = buf;
	va_list again;

	va_copy(again, ap);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	/* Longer: whole, to be shortened by its words (cut where memory runs out). */
	if (n >= (int)sizeof(buf) && (msg = malloc(n + 1)))
		vsnprintf(msg, n + 1, fmt, again);
	else
		msg = buf;
	va_end(again);
	shorten_words(msg);
	/* One write per line so lines from the launched command do not interleave mid-line. */
	fprintf(stderr, "heaptrace: %s\n", msg);
	if (msg != buf)
		free(msg);
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
