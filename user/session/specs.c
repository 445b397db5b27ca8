#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/presets.h"
#include "session/opts.h"
#include "session/specs.h"
#include "util/log.h"

void specs_init(struct spec_images *si, const struct trace_opts *o)
{
	memset(si, 0, sizeof(*si));
	si->o = o;
}

static void add_image(struct spec_images *si, const char *image)
{
	size_t used = strlen(si->images), want = strlen(image) + (used ? 2 : 0);

	si->n_images++;
	if (si->listed == si->n_images - 1 && used + want < sizeof(si->images) - 24) {
		snprintf(si->images + used, sizeof(si->images) - used, "%s%s", used ? ", " : "", image);
		si->listed++;
	}
}

int specs_plan(struct spec_images *si, struct probe_plan *plan, const struct objlist *objs, const char *image)
{
	const struct trace_opts *o = si->o;
	bool cpython = false;
	char why[PATH_MAX + 1000];

	add_image(si, image);
	for (int i = 0; i < o->n_syms; i++) {
		int rc = probes_find_symbol(plan, &o->syms[i], o->sym_option[i], objs, o->debug_dir, why, sizeof(why));
		if (rc < 0)
			return -1;
		if (rc > 0) {
			if (!si->found[i] && si->n_images > 1)
				ht_info("--%s %s: found in %s", o->sym_option[i], o->syms[i].name, image);
			si->found[i] = true;
		} else if (!si->first_why[i]) {
			si->first_why[i] = strdup(why);
		}
		cpython |= preset_cpython(o->sym_option[i]);
	}
	if (cpython)
		for (int i = 0; i < o->n_syms; i++)
			if (preset_cpython(o->sym_option[i]))
				return cpython_plan(&si->py, plan, objs, o->sym_option[i]) < 0 ? -1 : 0;
	/* Python frames whenever the program is CPython, as memray's; the preset only adds what is counted. */
	cpython_frames(&si->py, objs);
	return 0;
}

/* Where the first image's message says the function was looked for: "LIST" of "no function F in LIST; it may...". */
static void looked_in(const char *why, const char *name, char *buf, size_t len)
{
	char head[300];
	const char *at, *end;

	snprintf(head, sizeof(head), "no function %s in ", name);
	if (!why || !(at = strstr(why, head))) {
		snprintf(buf, len, "the target");
		return;
	}
	at += strlen(head);
	end = strstr(at, "; it may be static");
	snprintf(buf, len, "%.*s", end ? (int)(end - at) : (int)strlen(at), at);
}

int specs_missing(const struct spec_images *si, bool final)
{
	const struct trace_opts *o = si->o;
	bool said[HT_MAX_SPECS] = { false };
	int n = 0;

	for (int i = 0; i < o->n_syms; i++) {
		if (si->found[i] || said[i])
			continue;
		n++;
		if (!final) {
			ht_info("%s; probed if a program the target executes has it", si->first_why[i]);
			continue;
		}
		/*
		 * One line per option: a preset's missing functions together
		 * (--preset jemalloc on a program without jemalloc).
		 */
		char names[400] = "", where[PATH_MAX + 700];
		int group = 0;
		for (int k = i; k < o->n_syms; k++)
			if (!si->found[k] && !said[k] && (k == i || (!strncmp(o->sym_option[i], "preset ", 7) &&
								    o->sym_option[k] == o->sym_option[i]))) {
				said[k] = true;
				group++;
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", k == i ? "" : ", ",
					 o->syms[k].name);
			}
		if (si->n_images > 1)
			snprintf(where, sizeof(where), "any of the %d programs the target ran (%s%s)", si->n_images,
				 si->images, si->listed < si->n_images ? " and more" : "");
		else
			looked_in(si->first_why[i], o->syms[i].name, where, sizeof(where));
		if (group == 1 && si->n_images <= 1)
			ht_err("%s", si->first_why[i]);         /* as it always was */
		else if (group == 1)
			ht_err("--%s %s: no function %s in %s; it may be static: give it by address, 0xVADDR@OBJECT, or "
			       "install the object's debug info", o->sym_option[i], o->syms[i].name, names, where);
		else
			ht_err("--%s: none of its functions (%s) in %s", o->sym_option[i], names, where);
	}
	return n;
}

void specs_free(struct spec_images *si)
{
	for (int i = 0; i < HT_MAX_SPECS; i++)
		free(si->first_why[i]);
	cpython_free(&si->py);
	memset(si->first_why, 0, sizeof(si->first_why));
}
