/* --suppressions: LeakSanitizer's suppression files, and the built-in list. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/suppress.h"
#include "symbolize/symbolize.h"
#include "util/log.h"
#include "util/procfs.h"

struct suppressions {
	char **pat;
	size_t n, cap;
};

/*
 * The C runtime's own one-time allocations, live at every exit and never
 * the program's to free: heaptrack's built-in list (libc, the dynamic
 * loader) plus stdio's buffers and the loader's TLS blocks and dtv.
 */
static const char builtin[] =
	"# stdio: a stream's buffer, made at its first use (stdout's is never freed)\n"
	"leak:_IO_file_doallocate\n"
	"leak:_IO_wfile_doallocate\n"
	"# the dynamic loader: threads' static TLS and dtv, a dlopen'ed object's state\n"
	"leak:_dl_allocate_tls\n"
	"leak:_dl_resize_dtv\n"
	"leak:_dl_update_slotinfo\n"
	"leak:dl_open_worker\n"
	"# libc's caches: atexit handlers, locales, iconv modules, NSS, the time zone\n"
	"leak:__new_exitfn\n"
	"leak:_nl_load_locale\n"
	"leak:_nl_intern_locale_data\n"
	"leak:__gconv_read_conf\n"
	"leak:__nss_module_allocate\n"
	"leak:tzset_internal\n";

static int add(struct suppressions **s, const char *pat, size_t len)
{
	if (!*s && !(*s = calloc(1, sizeof(**s))))
		return -1;
	struct suppressions *l = *s;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **p = realloc(l->pat, cap * sizeof(*p));
		if (!p)
			return -1;
		l->pat = p;
		l->cap = cap;
	}
	if (!(l->pat[l->n] = strndup(pat, len)))
		return -1;
	l->n++;
	return 0;
}

int suppress_read_text(struct suppressions **s, const char *text, const char *name)
{
	unsigned line = 0;

	for (const char *p = text; *p;) {
		const char *nl = strchrnul(p, '\n'), *b = p, *e = nl;

		p = *nl ? nl + 1 : nl;
		line++;
		while (b < e && (*b == ' ' || *b == '\t' || *b == '\r'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (b == e || *b == '#')
			continue;
		const char *colon = memchr(b, ':', e - b);
		if (!colon) {
			ht_err("%s:%u: not a suppression: '%.*s' (LeakSanitizer's format: leak:PATTERN)", name, line,
			       (int)(e - b > 200 ? 200 : e - b), b);
			return -1;
		}
		/* LSan's files may hold other sanitizers' types; heaptrace has leaks only, and says so. */
		if (colon - b != 4 || memcmp(b, "leak", 4)) {
			ht_err("%s:%u: unknown suppression type '%.*s' (only leak:PATTERN)", name, line,
			       (int)(colon - b > 64 ? 64 : colon - b), b);
			return -1;
		}
		const char *pat = colon + 1;
		while (pat < e && (*pat == ' ' || *pat == '\t'))
			pat++;
		if (pat == e) {
			ht_err("%s:%u: leak: with no pattern (it would suppress every leak; '*' says so)", name, line);
			return -1;
		}
		if (memchr(pat, '\0', e - pat) || add(s, pat, e - pat)) {
			ht_err("%s:%u: out of memory", name, line);
			return -1;
		}
	}
	return 0;
}

int suppress_read_file(struct suppressions **s, const char *path)
{
	size_t len;
	char *text = read_file_len(path, &len);
	int rc;

	if (!text) {
		ht_err("--suppressions %s: %s", path, strerror(errno));
		return -1;
	}
	if (strlen(text) != len) {
		ht_err("%s: not a text file (a NUL byte at offset %zu)", path, strlen(text));
		free(text);
		return -1;
	}
	rc = suppress_read_text(s, text, path);
	free(text);
	return rc;
}

int suppress_add_builtin(struct suppressions **s)
{
	return suppress_read_text(s, builtin, "built-in suppressions");
}

/* '*' matches any run (none too); the rest of pat matches itself. */
static bool glob(const char *pat, const char *end, const char *str, bool anchored_end)
{
	const char *star = NULL, *resume = NULL;

	while (*str) {
		if (pat < end && *pat == '*') {
			star = ++pat;
			resume = str;
		} else if (pat < end && *pat == *str) {
			pat++;
			str++;
		} else if (star) {
			pat = star;
			str = ++resume;
		} else {
			return false;
		}
		/* Not anchored at the end: the pattern may stop anywhere. */
		if (pat == end && !anchored_end)
			return true;
	}
	while (pat < end && *pat == '*')
		pat++;
	return pat == end;
}

bool suppress_template_match(const char *pattern, const char *str)
{
	if (!str || !*str)
		return false;
	size_t len = strlen(pattern);
	bool start = pattern[0] == '^', finish = len > (size_t)start && pattern[len - 1] == '$';
	const char *b = pattern + start, *e = pattern + len - finish;

	if (start)
		return glob(b, e, str, finish);
	/* Anywhere: from each position, as a leading '*' would. */
	for (const char *s = str; *s; s++)
		if (glob(b, e, s, finish))
			return true;
	return b == e;
}

static bool match_any(const struct suppressions *s, const char *str)
{
	for (size_t i = 0; str && i < s->n; i++)
		if (suppress_template_match(s->pat[i], str))
			return true;
	return false;
}

/* The path of the object mapped at pc in maps text, "" if none. */
static void object_path(const char *maps, uint64_t pc, char *buf, size_t len)
{
	struct map_entry e;
	const char *pos = maps;

	buf[0] = '\0';
	while (maps_next(&pos, &e))
		if (pc >= e.lo && pc < e.hi) {
			snprintf(buf, len, "%s", e.path);
			return;
		}
}

static bool pc_suppressed(const struct suppressions *s, uint64_t pc, struct symbolizer *sym, const char *maps)
{
	char path[4200];
	const struct sym_frame *fr;
	int n = sym ? sym_lookup(sym, pc, true, &fr) : 0;

	for (int k = 0; k < n; k++)
		if (match_any(s, fr[k].func) || match_any(s, fr[k].system) || match_any(s, fr[k].file) ||
		    match_any(s, fr[k].module))
			return true;
	object_path(maps, pc - 1, path, sizeof(path));
	return match_any(s, path);
}

/*
 * Each pc's verdict, once: stacks share most of their frames, and a frame
 * is matched against every pattern in four names and its object's path
 * (t_stacks' 65,536: a run took 5.8 s before this cache, 1.3 s with it).  Open
 * addressing, pc 0 is the empty slot (a stack holds no pc 0).
 */
struct verdicts {
	uint64_t *pc;
	uint8_t *yes;
	size_t mask, n;
};

static int verdict_grow(struct verdicts *v)
{
	size_t cap = v->mask ? 2 * (v->mask + 1) : 4096;
	struct verdicts w = { calloc(cap, sizeof(*w.pc)), calloc(cap, 1), cap - 1, 0 };

	if (!w.pc || !w.yes) {
		free(w.pc);
		free(w.yes);
		return -1;
	}
	for (size_t i = 0; v->mask && i <= v->mask; i++)
		if (v->pc[i]) {
			size_t j = (v->pc[i] * 0x9E3779B97F4A7C15ull >> 20) & w.mask;
			while (w.pc[j])
				j = (j + 1) & w.mask;
			w.pc[j] = v->pc[i];
			w.yes[j] = v->yes[i];
			w.n++;
		}
	free(v->pc);
	free(v->yes);
	*v = w;
	return 0;
}

static bool stack_suppressed(const struct suppressions *s, const struct prof_stack *st, struct symbolizer *sym,
			     const char *maps, struct verdicts *v)
{
	for (uint32_t i = 0; i < st->depth; i++) {
		uint64_t pc = st->pcs[i];
		size_t j = 0;
		/* Kept at most half full; out of memory, the cache is only left out. */
		bool usable = pc && (2 * (v->n + 1) <= (v->mask ? v->mask + 1 : 0) || !verdict_grow(v)), yes;

		if (usable) {
			j = (pc * 0x9E3779B97F4A7C15ull >> 20) & v->mask;
			while (v->pc[j] && v->pc[j] != pc)
				j = (j + 1) & v->mask;
		}
		if (usable && v->pc[j] == pc) {
			yes = v->yes[j];
		} else {
			yes = pc_suppressed(s, pc, sym, maps);
			if (usable) {
				v->pc[j] = pc;
				v->yes[j] = yes;
				v->n++;
			}
		}
		if (yes)
			return true;
	}
	return false;
}

/* given: a symbolizer of p->maps the caller keeps, whose names the output then reuses (NULL: one of its own). */
void suppress_apply(const struct suppressions *s, struct profile *p, struct symbolizer *given)
{
	struct symbolizer *sym = given;
	struct verdicts v = { 0 };

	memset(&p->suppressed, 0, sizeof(p->suppressed));
	if (!s || !s->n)
		return;
	for (size_t i = 0; i < p->n; i++) {
		struct prof_stack *st = &p->stacks[i];

		st->suppressed = false;
		/* Only what is live can be a leak: the rest need not be symbolized. */
		if (st->c.inuse_bytes <= 0 && st->c.inuse_objects <= 0)
			continue;
		if (!sym && !(sym = sym_open(p->maps ? p->maps : ""))) {
			ht_err("suppressions: cannot symbolize the stacks: %s", strerror(errno));
			return;
		}
		if (!stack_suppressed(s, st, sym, p->maps ? p->maps : "", &v))
			continue;
		st->suppressed = true;
		p->suppressed.bytes += st->c.inuse_bytes;
		p->suppressed.objects += st->c.inuse_objects;
		p->suppressed.stacks++;
	}
	if (sym && sym != given)
		sym_close(sym);
	free(v.pc);
	free(v.yes);
}

void suppress_free(struct suppressions *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->pat[i]);
	free(s->pat);
	free(s);
}
