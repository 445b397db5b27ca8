#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "log.h"
#include "placement.h"
#include "probes.h"

/* The C allocator API as glibc, jemalloc and tcmalloc export it. */
static const struct {
	const char *name;
	struct ht_alloc_spec spec;
	bool is_free;
} malloc_api[] = {
	{ .name = "malloc", .spec = { .size_arg = 1 } },
	{ .name = "calloc", .spec = { .size_arg = 1, .size_mul_arg = 2 } },
	{ .name = "realloc", .spec = { .old_ptr_arg = 1, .size_arg = 2 } },
	{ .name = "reallocarray", .spec = { .old_ptr_arg = 1, .size_arg = 2, .size_mul_arg = 3 } },
	{ .name = "posix_memalign", .spec = { .out_ptr_arg = 1, .size_arg = 3 } },
	{ .name = "aligned_alloc", .spec = { .size_arg = 2 } },
	{ .name = "memalign", .spec = { .size_arg = 2 } },
	{ .name = "valloc", .spec = { .size_arg = 1 } },
	{ .name = "pvalloc", .spec = { .size_arg = 1, .page_round = 1 } },
	{ .name = "free", .spec = { .old_ptr_arg = 1 }, .is_free = true },
};

/* The argument registers the BPF programs read at a probe with this spec. */
static unsigned args_read(const struct ht_alloc_spec *s)
{
	return 1u << s->size_arg | 1u << s->size_mul_arg | 1u << s->old_ptr_arg | 1u << s->out_ptr_arg;
}

int probes_plan_malloc(struct probe_plan *plan, const char *path, bool at_entry)
{
	struct elfobj o;
	struct placer *pl;

	memset(plan, 0, sizeof(*plan));
	if (elfobj_open(&o, path, true))
		return -1;
	pl = placer_new(&o);
	if (!pl) {
		ht_err("cannot start the instruction decoder");
		elfobj_close(&o);
		return -1;
	}
	plan->path = strdup(path);
	for (size_t i = 0; i < sizeof(malloc_api) / sizeof(malloc_api[0]); i++) {
		uint64_t va, size;
		int64_t off;

		if (!elfobj_func(&o, malloc_api[i].name, &va, &size))
			continue;
		struct placement where;
		if (placer_choose(pl, va, size, args_read(&malloc_api[i].spec), at_entry, &where)) {
			ht_info("%s: cannot read the code of %s at 0x%lx", path, malloc_api[i].name, va);
			continue;
		}
		off = elfobj_file_offset(&o, where.vaddr);
		if (off < 0) {
			ht_info("%s: %s at 0x%lx is in no executable segment", path, malloc_api[i].name, va);
			continue;
		}
		/* Aliases (memalign = aligned_alloc in glibc) share one address: probe it once. */
		int dup = -1;
		for (int k = 0; k < plan->n; k++)
			if (plan->probes[k].offset == (uint64_t)off)
				dup = k;
		if (dup >= 0) {
			if (memcmp(&plan->specs[plan->probes[dup].spec], &malloc_api[i].spec,
				   sizeof(malloc_api[i].spec)))
				ht_err("warning: %s and %s share an address but not a signature; tracing it as %s",
				       plan->probes[dup].func, malloc_api[i].name, plan->probes[dup].func);
			ht_info("%s is an alias of %s", malloc_api[i].name, plan->probes[dup].func);
			continue;
		}
		struct probe *p = &plan->probes[plan->n];
		p->func = malloc_api[i].name;
		p->offset = off;
		p->delta = where.vaddr - va;
		p->where = where;
		p->spec = plan->n;
		p->is_free = malloc_api[i].is_free;
		plan->specs[plan->n++] = malloc_api[i].spec;
	}
	placer_free(pl);
	elfobj_close(&o);

	bool have_malloc = false, have_free = false;
	for (int k = 0; k < plan->n; k++) {
		have_malloc |= !strcmp(plan->probes[k].func, "malloc");
		have_free |= plan->probes[k].is_free;
	}
	if (!have_malloc || !have_free) {
		ht_err("%s defines no %s", path, have_malloc ? "free" : "malloc");
		return -1;
	}
	return 0;
}

/* One uprobe_multi link per program: entries, returns, frees. */
static int attach_multi(const struct probe_plan *plan, struct tracer *tr, pid_t pid)
{
	static const enum tracer_prog progs[] = { PROG_ALLOC_ENTER, PROG_ALLOC_RETURN, PROG_FREE_ENTER };
	uint64_t offsets[HT_MAX_SPECS], cookies[HT_MAX_SPECS];

	for (size_t k = 0; k < sizeof(progs) / sizeof(progs[0]); k++) {
		uint32_t n = 0;
		for (int i = 0; i < plan->n; i++) {
			if (plan->probes[i].is_free != (progs[k] == PROG_FREE_ENTER))
				continue;
			offsets[n] = plan->probes[i].offset;
			cookies[n++] = plan->probes[i].spec;
		}
		if (!n)
			continue;
		int err = tracer_attach_multi(tr, progs[k], plan->path, offsets, cookies, n, pid);
		if (err)
			return err;
	}
	return 0;
}

static int attach_each(const struct probe_plan *plan, struct tracer *tr, pid_t pid)
{
	for (int k = 0; k < plan->n; k++) {
		const struct probe *p = &plan->probes[k];
		int err = tracer_attach(tr, p->is_free ? PROG_FREE_ENTER : PROG_ALLOC_ENTER, plan->path,
					p->offset, p->spec, pid);
		if (!err && !p->is_free)
			err = tracer_attach(tr, PROG_ALLOC_RETURN, plan->path, p->offset, p->spec, pid);
		if (err) {
			ht_err("cannot attach a uprobe to %s in %s: %s", p->func, plan->path, strerror(-err));
			return err;
		}
	}
	return 0;
}

int probes_attach(const struct probe_plan *plan, struct tracer *tr, pid_t pid)
{
	int err = tr->multi ? attach_multi(plan, tr, pid) : attach_each(plan, tr, pid);

	if (err == -EOPNOTSUPP)
		return 1;
	if (err) {
		if (tr->multi)
			ht_err("cannot attach uprobes in %s: %s", plan->path, strerror(-err));
		return -1;
	}
	for (int k = 0; k < plan->n; k++) {
		const struct probe *p = &plan->probes[k];
		ht_info("probe %-14s %s+0x%lx = %s+%lu `%s`: %s%s", p->func, plan->path, p->offset,
			p->func, p->delta, p->where.insn, p->where.why, p->is_free ? "" : " (and its return)");
	}
	ht_info("attached with %s", tr->multi ? "uprobe_multi links" : "one perf event per probe");
	return 0;
}

void probes_print(const struct probe_plan *plan, FILE *f)
{
	for (int k = 0; k < plan->n; k++) {
		const struct probe *p = &plan->probes[k];
		fprintf(f, "%s %s 0x%lx +%lu %s `%s` %s\n", p->func, plan->path, p->offset, p->delta,
			p->is_free ? "free" : "alloc", p->where.insn, p->where.why);
	}
}

void probes_free(struct probe_plan *plan)
{
	free(plan->path);
	plan->path = NULL;
}
