/* Reading the legacy heap profile text back, for `heaptrace diff`. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/array.h"
#include "util/log.h"
#include "profile/profile.h"
#include "profile/pycode.h"
#include "util/procfs.h"

/* "  in: inb [ al: alb] @ 0x.. 0x.." into s; false when the line is not one. */
static bool parse_stack(char *line, struct prof_stack *s)
{
	long long io, ib, ao, ab;
	char *at = strchr(line, '@');
	size_t cap = 16;

	errno = 0;
	if (!at || sscanf(line, " %lld: %lld [ %lld: %lld ]", &io, &ib, &ao, &ab) != 4 || errno == ERANGE)
		return false;
	memset(s, 0, sizeof(*s));
	s->c.inuse_objects = io;
	s->c.inuse_bytes = ib;
	s->c.alloc_objects = ao;
	s->c.alloc_bytes = ab;
	s->pcs = malloc(cap * sizeof(uint64_t));
	for (char *tok = strtok(at + 1, " \t\n"); tok && s->pcs; tok = strtok(NULL, " \t\n")) {
		if (ARRAY_RESERVE(s->pcs, cap, s->depth + 1, 16)) {
			free(s->pcs);
			s->pcs = NULL;
			break;
		}
		s->pcs[s->depth++] = strtoull(tok, NULL, 16);
	}
	/* Exactly as many as read: a profile of many shallow records costs no more than its text. */
	if (s->pcs && s->depth < cap) {
		uint64_t *n = realloc(s->pcs, (s->depth ? s->depth : 1) * sizeof(uint64_t));
		if (n)
			s->pcs = n;
	}
	return s->pcs != NULL;
}

/* "... @ heap_v2/R": a sampled profile (heaptrace --sample-rate, tcmalloc); R, or 0. */
static uint64_t header_rate(const char *line)
{
	const char *at = strchr(line, '@');
	unsigned long long r;

	return at && sscanf(at + 1, " heap_v2/%llu", &r) == 1 ? r : 0;
}

/*
 * A heap_v2 record's raw counts to estimates, as go tool pprof's
 * scaleHeapSample does: count and bytes times 1 / (1 - exp(-a/R)), a the
 * record's average size, truncated.
 */
static void unsample(int64_t *count, int64_t *bytes, uint64_t rate)
{
	if (*count <= 0 || *bytes <= 0) {
		*count = *bytes = 0;
		return;
	}
	if (rate <= 1)
		return;
	double scale = 1 / (1 - exp(-((double)*bytes / *count) / rate));
	double c = *count * scale, b = *bytes * scale;
	*count = c < 9e18 ? (int64_t)c : INT64_MAX;
	*bytes = b < 9e18 ? (int64_t)b : INT64_MAX;
}

/*
 * The whole file, NUL-terminated, if it can be a profile: it starts like one
 * (gzip, or "heap profile:" text) and is at most PROFILE_MAX_BYTES.  The
 * start is checked on the first read, so /dev/zero or a big binary is
 * turned away at once instead of read until memory runs out.  NULL with
 * the error printed.
 */
static char *load(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0, cap = 65536;
	char *buf = NULL;
	struct stat st;

	if (fd < 0 || fstat(fd, &st)) {
		ht_err("cannot read %s: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		ht_err("%s is a directory, not a heap profile", path);
		goto fail;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > PROFILE_MAX_BYTES) {
		ht_err("%s is %" PRIu64 " MiB, larger than any profile heaptrace reads (%llu MiB)", path,
		       (uint64_t)st.st_size >> 20, PROFILE_MAX_BYTES >> 20);
		goto fail;
	}
	if (S_ISREG(st.st_mode))
		cap = st.st_size + 1;
	for (;;) {
		if (n + 1 >= cap) {
			if (cap > PROFILE_MAX_BYTES) {
				ht_err("%s: more than %llu MiB, larger than any profile heaptrace reads", path,
				       PROFILE_MAX_BYTES >> 20);
				goto fail;
			}
			char *g = realloc(buf, cap *= 2);
			if (!g)
				goto nomem;
			buf = g;
		} else if (!buf && !(buf = malloc(cap))) {
			goto nomem;
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ht_err("cannot read %s: %s", path, strerror(errno));
			goto fail;
		}
		size_t was = n;
		n += r;
		if (!r)
			break;
		if (was < 13 && n >= 13 && !((uint8_t)buf[0] == 0x1f && (uint8_t)buf[1] == 0x8b) &&
		    strncmp(buf, "heap profile:", 13)) {
			ht_err("%s is not a heap profile (neither 'heap profile:' text nor a gzipped profile.proto)",
			       path);
			goto fail;
		}
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
nomem:
	ht_err("cannot read %s: %s", path, strerror(ENOMEM));
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/*
 * The PYTHON_CODE lines after the memory map (output/pprof_text.c's
 * python_code(), "INDEX FIRSTLINE NAME<tab>FILE"), cut off the map, into
 * m.  -1: a line that is not one (said), or out of memory.
 */
static int python_code(const char *path, char *maps, struct pycode_map *m)
{
	char *at = maps, *save = NULL;

	if (strncmp(maps, "PYTHON_CODE:\n", 13) && (at = strstr(maps, "\nPYTHON_CODE:\n")))
		at++;
	if (!at)
		return 0;
	*at = '\0';
	for (char *line = strtok_r(at + 13, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *name, *tab, *end;
		uint64_t index = strtoull(line, &end, 16);
		long first = end != line && *end == ' ' ? strtol(end + 1, &name, 10) : 0;
		if (end == line || *end != ' ' || name == end + 1 || *name != ' ' || !(tab = strchr(name + 1, '\t')) ||
		    !index || index > HT_PY_CODE_MASK || first < 0 || first > 1 << 30) {
			ht_err("%s: a PYTHON_CODE line is not 'INDEX FIRSTLINE NAME<tab>FILE': %.80s", path, line);
			return -1;
		}
		*tab = '\0';
		if (pycode_add(m, index, name + 1, tab + 1, (int)first))
			return -1;
	}
	return 0;
}

int profile_read_text(const char *path, struct profile *p, char **maps)
{
	struct pycode_map pm = { 0 };
	char *save = NULL, *text;
	size_t cap = 0, len;
	int lineno = 0;
	uint64_t rate = 0;

	memset(p, 0, sizeof(*p));
	*maps = NULL;
	if (!(text = load(path, &len)))
		return -1;
	if (len >= 2 && (uint8_t)text[0] == 0x1f && (uint8_t)text[1] == 0x8b) {
		int r = profile_read_proto((uint8_t *)text, len, path, p, maps);
		free(text);
		return r;
	}
	if (strlen(text) != len) {
		int at = 1;
		for (const char *c = text; *c; c++)
			at += *c == '\n';
		ht_err("%s:%d: a NUL byte in a text profile", path, at);
		goto bad;
	}
	/* CRLF (a profile that passed through Windows) reads as LF. */
	if (strchr(text, '\r')) {
		char *w = text;
		for (const char *r = text; *r; r++)
			if (!(r[0] == '\r' && r[1] == '\n'))
				*w++ = *r;
		*w = '\0';
	}
	/*
	 * Every line of a profile ends with a newline: a last one without is a
	 * file cut short, maybe in the middle of a record whose counts or
	 * frames would be read as if whole.  An error where the parse reaches it.
	 */
	const char *cut = NULL;
	int cut_lineno = 0;
	size_t tl = strlen(text);
	if (tl && text[tl - 1] != '\n') {
		cut = strrchr(text, '\n');
		cut = cut ? cut + 1 : text;
		cut_lineno = 1;
		for (const char *c = text; c < cut; c++)
			cut_lineno += *c == '\n';
	}
	char *mapped = strstr(text, "\nMAPPED_LIBRARIES:\n");
	if (mapped) {
		*maps = strdup(mapped + strlen("\nMAPPED_LIBRARIES:\n"));
		mapped[1] = '\0';
		if (*maps && python_code(path, *maps, &pm))
			goto bad;
	}
	/* Counted before any is parsed: a file of too many records costs no memory. */
	size_t lines = 0;
	for (const char *c = text; (c = strchr(c, '\n')); c++)
		lines++;
	if (lines > PROFILE_MAX_RECORDS + 1) {
		ht_err("%s: %zu lines, more stacks than any profile heaptrace reads (%u)", path, lines,
		       PROFILE_MAX_RECORDS);
		goto bad;
	}
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct prof_stack s;
		size_t ll = strlen(line);

		++lineno;
		if (ll > PROFILE_MAX_LINE) {
			ht_err("%s:%d: a line of %zu bytes, longer than any profile record", path, lineno, ll);
			goto bad;
		}
		if (lineno == 1) {
			struct prof_stack hdr;
			rate = header_rate(line);
			if (strncmp(line, "heap profile:", 13) || !parse_stack(line + 13, &hdr)) {
				ht_err("%s is not a heap profile (no 'heap profile: N: N [N: N] @' header)", path);
				goto bad;
			}
			free(hdr.pcs);
			if (line == cut)
				goto cut_short;
			continue;
		}
		if (line == cut)
			goto cut_short;
		if (!parse_stack(line, &s)) {
			ht_err("%s:%d: not a heap profile record", path, lineno);
			goto bad;
		}
		/*
		 * heaptrace writes the first address minus one (output/pprof_text.c);
		 * back to the return address, so that the stacks of a text profile
		 * and a proto one match.  gperftools' own first address becomes one
		 * past its return address: symbolized at the instruction after the
		 * call, as google-pprof symbolizes it.
		 */
		if (s.depth)
			s.pcs[0]++;
		if (rate) {
			/* The counters become estimates, like every reader's of heap_v2. */
			int64_t io = s.c.inuse_objects, ib = s.c.inuse_bytes, ao = s.c.alloc_objects, ab = s.c.alloc_bytes;
			unsample(&io, &ib, rate);
			unsample(&ao, &ab, rate);
			s.c.inuse_objects = io;
			s.c.inuse_bytes = ib;
			s.c.alloc_objects = ao;
			s.c.alloc_bytes = ab;
		}
		if (p->n == PROFILE_MAX_RECORDS) {
			ht_err("%s: more than %u records, more stacks than any profile heaptrace reads", path,
			       PROFILE_MAX_RECORDS);
			free(s.pcs);
			goto bad;
		}
		if (ARRAY_RESERVE(p->stacks, cap, p->n + 1, 256)) {
			free(s.pcs);
			goto bad;
		}
		p->stacks[p->n++] = s;
	}
	if (cut && lineno) {
cut_short:
		ht_err("%s:%d: the file ends in the middle of this line: a profile cut short", path, cut_lineno);
		goto bad;
	}
	free(text);
	if (!lineno) {
		ht_err("%s is empty, not a heap profile", path);
		goto bad_freed;
	}
	p->maps = *maps;
	if (profile_check_range(p, path))
		goto bad_freed;
	/* This process's numbers for the file's code objects: a file without their names has none (0). */
	for (size_t k = 0; k < p->n; k++)
		for (uint32_t i = 0; i < p->stacks[k].depth; i++)
			p->stacks[k].pcs[i] = pycode_word(&pm, p->stacks[k].pcs[i]);
	pycode_free(&pm);
	profile_normalize(p);
	return 0;
bad:
	free(text);
bad_freed:
	pycode_free(&pm);
	free(*maps);
	*maps = NULL;
	profile_free(p);
	return -1;
}
