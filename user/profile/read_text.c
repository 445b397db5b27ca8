/* Reading the legacy heap profile text back, for `heaptrace diff`. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "profile/profile.h"
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
		if (s->depth == cap) {
			uint64_t *n = realloc(s->pcs, (cap *= 2) * sizeof(uint64_t));
			if (!n) {
				free(s->pcs);
				s->pcs = NULL;
				break;
			}
			s->pcs = n;
		}
		s->pcs[s->depth++] = strtoull(tok, NULL, 16);
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

int profile_read_text(const char *path, struct profile *p, char **maps)
{
	char *text = read_text_file(path), *save = NULL;
	size_t cap = 0;
	int lineno = 0;
	uint64_t rate = 0;

	memset(p, 0, sizeof(*p));
	*maps = NULL;
	if (!text) {
		ht_err("cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if ((uint8_t)text[0] == 0x1f && (uint8_t)text[1] == 0x8b) {
		/* gzip: a -f proto profile.  read_text_file stops at no NUL, so take the size from the file. */
		FILE *f = fopen(path, "re");
		uint8_t *buf = NULL;
		long size = -1;
		if (f && !fseek(f, 0, SEEK_END) && (size = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET) &&
		    (buf = malloc(size)) && fread(buf, 1, size, f) == (size_t)size) {
			free(text);
			fclose(f);
			int r = profile_read_proto(buf, size, path, p, maps);
			free(buf);
			return r;
		}
		if (f)
			fclose(f);
		free(buf);
	}
	char *mapped = strstr(text, "\nMAPPED_LIBRARIES:\n");
	if (mapped) {
		*maps = strdup(mapped + strlen("\nMAPPED_LIBRARIES:\n"));
		mapped[1] = '\0';
	}
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct prof_stack s;

		if (++lineno == 1) {
			struct prof_stack hdr;
			rate = header_rate(line);
			if (strncmp(line, "heap profile:", 13) || !parse_stack(line + 13, &hdr)) {
				ht_err("%s is not a heap profile (no 'heap profile: N: N [N: N] @' header)", path);
				goto bad;
			}
			free(hdr.pcs);
			continue;
		}
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
		if (p->n == cap) {
			cap = cap ? 2 * cap : 256;
			struct prof_stack *n = realloc(p->stacks, cap * sizeof(*n));
			if (!n) {
				free(s.pcs);
				goto bad;
			}
			p->stacks = n;
		}
		p->stacks[p->n++] = s;
	}
	free(text);
	if (!lineno) {
		ht_err("%s is empty, not a heap profile", path);
		goto bad_freed;
	}
	p->maps = *maps;
	profile_normalize(p);
	return 0;
bad:
	free(text);
bad_freed:
	free(*maps);
	*maps = NULL;
	profile_free(p);
	return -1;
}
