#include <errno.h>
#include <glob.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/allocator.h"
#include "util/elfobj.h"
#include "util/log.h"

static bool objlist_add(struct objlist *l, const char *path)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->p[i], path))
			return false;
	if (l->n == MAX_OBJS)
		return false;
	l->p[l->n++] = strdup(path);
	return true;
}

void objlist_free(struct objlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->p[i]);
	l->n = 0;
}


const char *objlist_name(const struct objlist *objs, int i)
{
	size_t r = strlen(objs->root);
	return strncmp(objs->p[i], objs->root, r) ? objs->p[i] : objs->p[i] + r;
}

static bool defines_malloc(const char *path)
{
	struct elfobj o;
	uint64_t va, sz;
	bool yes;

	if (elfobj_open(&o, path, false))
		return false;
	yes = elfobj_func(&o, "malloc", &va, &sz);
	elfobj_close(&o);
	return yes;
}

static bool same_class(const char *path, const GElf_Ehdr *want)
{
	struct elfobj o;
	bool ok;

	if (elfobj_open(&o, path, false))
		return false;
	ok = o.ehdr.e_ident[EI_CLASS] == want->e_ident[EI_CLASS] &&
	     o.ehdr.e_machine == want->e_machine;
	elfobj_close(&o);
	return ok;
}

/* ld.so.conf and its includes, in order: where ld.so.cache points for names. */
static void read_ld_conf(const char *file, struct objlist *dirs, int depth)
{
	FILE *f = fopen(file, "re");
	char line[4096];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");
		s[strcspn(s, "#\r\n")] = '\0';
		for (char *e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = '\0';
		if (!*s)
			continue;
		if (!strncmp(s, "include", 7) && (s[7] == ' ' || s[7] == '\t') && depth < 8) {
			glob_t g;
			char *pat = s + 8 + strspn(s + 8, " \t");
			if (!glob(pat, 0, NULL, &g)) {
				for (size_t i = 0; i < g.gl_pathc; i++)
					read_ld_conf(g.gl_pathv[i], dirs, depth + 1);
				globfree(&g);
			}
		} else if (*s == '/') {
			objlist_add(dirs, s);
		}
	}
	fclose(f);
}

/* Search a colon-separated list, with $ORIGIN expanded to origin. */
static char *search_dirs(const char *list, const char *origin, const char *name,
			 const GElf_Ehdr *want)
{
	char *copy = strdup(list), *save = NULL;

	for (char *d = strtok_r(copy, ":;", &save); d; d = strtok_r(NULL, ":;", &save)) {
		char dir[4096], path[8200];
		const char *o = strstr(d, "$ORIGIN") ? "$ORIGIN" : strstr(d, "${ORIGIN}") ? "${ORIGIN}" : NULL;

		if (o) {
			const char *at = strstr(d, o);
			snprintf(dir, sizeof(dir), "%.*s%s%s", (int)(at - d), d, origin, at + strlen(o));
		} else {
			snprintf(dir, sizeof(dir), "%s", d);
		}
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (!access(path, R_OK) && same_class(path, want)) {
			free(copy);
			return strdup(path);
		}
	}
	free(copy);
	return NULL;
}

/* ld.so's order: DT_RPATH (without RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, ld.so.conf, defaults. */
static char *resolve_needed(const char *name, const char *requester, const struct elf_dyninfo *di,
			    const struct objlist *conf, const GElf_Ehdr *want, const char *llp)
{
	char *origin_buf = strdup(requester);
	const char *origin = dirname(origin_buf);
	char *r = NULL;

	if (strchr(name, '/'))
		r = strdup(name);
	if (!r && di->rpath && !di->runpath)
		r = search_dirs(di->rpath, origin, name, want);
	if (!r && llp)
		r = search_dirs(llp, origin, name, want);
	if (!r && di->runpath)
		r = search_dirs(di->runpath, origin, name, want);
	for (int i = 0; !r && i < conf->n; i++)
		r = search_dirs(conf->p[i], origin, name, want);
	if (!r)
		r = search_dirs("/lib64:/usr/lib64:/lib:/usr/lib", origin, name, want);
	free(origin_buf);
	return r;
}

/*
 * The objects a launched executable will load, in the loader's symbol
 * search order, given the LD_PRELOAD and LD_LIBRARY_PATH it runs with.
 */
static int load_order(const char *exe, struct objlist *objs, const char *pre, const char *llp)
{
	struct objlist conf = { 0 };
	struct elfobj o;

	if (elfobj_open(&o, exe, true))
		return -1;
	GElf_Ehdr want = o.ehdr;
	bool dynamic = elfobj_dynamic(&o);
	elfobj_close(&o);

	objlist_add(objs, exe);
	if (!dynamic)
		return 0;
	read_ld_conf("/etc/ld.so.conf", &conf, 0);
	if (pre) {
		char *copy = strdup(pre), *save = NULL;
		for (char *p = strtok_r(copy, ": \t", &save); p; p = strtok_r(NULL, ": \t", &save)) {
			struct elf_dyninfo none = { 0 };
			char *r = resolve_needed(p, exe, &none, &conf, &want, llp);
			if (r)
				objlist_add(objs, r);
			free(r);
		}
		free(copy);
	}
	/* Breadth first, as ld.so loads them. */
	for (int i = 0; i < objs->n; i++) {
		struct elf_dyninfo di;

		if (elfobj_open(&o, objs->p[i], false))
			continue;
		elfobj_dyninfo(&o, &di);
		elfobj_close(&o);
		for (int k = 0; k < di.n_needed; k++) {
			char *r = resolve_needed(di.needed[k], objs->p[i], &di, &conf, &want, llp);
			if (r)
				objlist_add(objs, r);
			else
				ht_info("%s: cannot find %s", objs->p[i], di.needed[k]);
			free(r);
		}
		elfobj_dyninfo_free(&di);
	}
	objlist_free(&conf);
	return 0;
}

static bool is_libc(const char *path)
{
	const char *b = strrchr(path, '/');
	return !strncmp(b ? b + 1 : path, "libc.so", 7) || !strncmp(b ? b + 1 : path, "libc-", 5);
}

/*
 * The objects mapped executable in a running process.  Maps list them by
 * address, not load order, so the executable goes first and libc last:
 * an allocator that replaces malloc is whatever else defines it.
 */
static void mapped_objects(const struct target *t, struct objlist *objs)
{
	struct objlist rest = { 0 };
	struct map_entry e;
	char root[64];

	snprintf(root, sizeof(root), "/proc/%d/root", t->pid);
	for (const char *pos = t->maps; maps_next(&pos, &e);) {
		char full[4300];

		if (e.perms[2] != 'x' || e.path[0] != '/' || strstr(e.path, " (deleted)"))
			continue;
		snprintf(full, sizeof(full), "%s%s", root, e.path);
		objlist_add(!strcmp(e.path, t->exe) ? objs : &rest, full);
	}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < rest.n; i++)
			if (is_libc(rest.p[i]) == pass)
				objlist_add(objs, rest.p[i]);
	objlist_free(&rest);
}

int target_objects(const struct target *t, struct objlist *objs)
{
	memset(objs, 0, sizeof(*objs));
	if (t->launched) {
		objs->root = "";
		/* The command runs with our environment. */
		if (load_order(t->image ? t->image : t->exe, objs, getenv("LD_PRELOAD"), getenv("LD_LIBRARY_PATH"))) {
			objlist_free(objs);
			return -1;
		}
		return 0;
	}
	snprintf(objs->root_buf, sizeof(objs->root_buf), "/proc/%d/root", t->pid);
	objs->root = objs->root_buf;
	mapped_objects(t, objs);
	return 0;
}

int image_objects(pid_t pid, const char *root, struct objlist *objs)
{
	char *exe = proc_exe(pid), *pre = proc_getenv(pid, "LD_PRELOAD"), *llp = proc_getenv(pid, "LD_LIBRARY_PATH");
	char path[4200];
	int rc = -1;

	memset(objs, 0, sizeof(*objs));
	snprintf(objs->root_buf, sizeof(objs->root_buf), "%s", root);
	objs->root = objs->root_buf;
	if (exe) {
		snprintf(path, sizeof(path), "%s%s", root, exe);
		rc = load_order(path, objs, pre, llp);
	}
	if (rc)
		objlist_free(objs);
	free(exe);
	free(pre);
	free(llp);
	return rc;
}

int allocator_choose(const struct objlist *objs, const char *override, char **primary, char **libc)
{
	*primary = *libc = NULL;
	if (override) {
		if (!defines_malloc(override)) {
			ht_err("--lib %s: %s", override, access(override, R_OK) ? strerror(errno) : "defines no malloc");
			return -1;
		}
		*primary = strdup(override);
	}
	for (int i = 0; i < objs->n && !*primary; i++)
		if (defines_malloc(objs->p[i]))
			*primary = strdup(objs->p[i]);
	if (!*primary) {
		ht_err("no allocator found: none of the %d objects of %s defines malloc", objs->n,
		       objs->n ? objlist_name(objs, 0) : "the target");
		for (int i = 0; i < objs->n; i++)
			ht_info("  looked in %s", objs->p[i]);
		return -1;
	}
	ht_info("allocator: %s", *primary);
	for (int i = 0; i < objs->n; i++) {
		if (is_libc(objs->p[i]) && strcmp(objs->p[i], *primary) && defines_malloc(objs->p[i])) {
			*libc = strdup(objs->p[i]);
			ht_info("libc's allocator is loaded too: probing %s as well", *libc);
			break;
		}
	}
	return 0;
}
