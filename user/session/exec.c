#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/allocator.h"
#include "probe/plan.h"
#include "tracer/tracer.h"
#include "session/exec.h"
#include "session/opts.h"
#include "session/specs.h"
#include "util/log.h"

/*
 * The new program's allocator, probed when it is an object the plan lacks,
 * and the specs it has; the process's missing probes attached.
 */
static int plan_allocator(struct exec_follow *x, const struct objlist *objs, pid_t pid, uint32_t slot)
{
	struct probe_plan *plan = x->plan;
	char *primary = NULL, *libc = NULL;
	int from = plan->n, err = 0;

	if (!x->o->no_libc) {
		if (allocator_choose(objs, x->o->lib, &primary, &libc))
			return -1;
		if (!probes_have_object(plan, primary))
			err = probes_add_malloc(plan, primary, true);
		if (!err && libc && !probes_have_object(plan, libc))
			err = probes_add_malloc(plan, libc, false);
		free(primary);
		free(libc);
	}
	/* The specs, resolved in the program that runs now (a shim's real program has them). */
	if (!err && x->specs && objs->n && specs_plan(x->specs, plan, objs, objlist_name(objs, 0)))
		err = -1;
	/* What was added before an error (too many probes) is still good. */
	if (plan->n > from && tracer_set_specs(x->tr, plan->specs, from, plan->n - from)) {
		ht_err("PID %d: cannot load the descriptors of its allocator's probes", pid);
		while (plan->n > from)
			free(plan->probes[--plan->n].func);
		return -1;
	}
	/* Probes another process's program brought in, this one lacks: uprobes bind to a process. */
	if (x->upto[slot] < plan->n) {
		if (!slot && x->to_stub)
			x->to_stub(x->to_stub_arg, x->upto[slot]);
		if (probes_attach_new(plan, x->upto[slot], x->tr, pid))
			return -1;
		/* Uprobes from the start: never the fast path's to give back (probes_attach_fallback). */
		for (int i = x->upto[slot]; i < plan->n; i++)
			plan->probes[i].attached = !plan->probes[i].stub;
		x->upto[slot] = plan->n;
	}
	return err ? -1 : 0;
}

int exec_follow(struct exec_follow *x, pid_t pid, uint32_t slot, const char *maps, const char *root)
{
	struct objlist objs;
	size_t forgot = tracer_forget_proc(x->tr, slot);
	int rc;

	if (forgot)
		ht_info("PID %d: the %zu stacks of the program it replaced are left out of its profile", pid, forgot);
	if (image_objects(pid, root, &objs)) {
		ht_err("PID %d: cannot read the program it executed: its allocations are traced only "
		       "if it uses an allocator probed already", pid);
		return -1;
	}
	if (x->uw)
		unwind_exec(x->uw, slot, objs.p, objs.n, maps, root);
	rc = plan_allocator(x, &objs, pid, slot);
	objlist_free(&objs);
	return rc;
}

void exec_describe(char *buf, size_t len, const char *name, const char *file)
{
	if (!name || !file || !strcmp(name, file))
		snprintf(buf, len, "%s", name ? name : file ? file : "?");
	else
		snprintf(buf, len, "%s -> %s", name, file);
}
