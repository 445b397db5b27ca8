/*
 * The BPF side loaded and the plan attached: the stack mode and the CFI
 * tables (--unwind), the tracer's configuration from the options and the
 * plan, what the maps would cost, and the step down to what the kernel
 * has (uprobe_multi links, then uprobe sessions) with a reload each time.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/kernel.h"
#include "inject/ring.h"
#include "output/output.h"
#include "session/state.h"
#include "util/log.h"
#include "util/procfs.h"

static void maps_changed(void *uw, const char *maps, const char *root)
{
	unwind_maps_changed(uw, maps, root);
}

/*
 * --unwind: CFI tables for the target's objects, compiled (or taken from
 * the cache) before the BPF object is loaded.  The stack mode to use.
 */
static enum ht_stack_mode plan_unwind(struct session *s)
{
	const struct trace_opts *o = s->o;
	struct objlist objs;

	if (o->stack_mode == HT_STACK_KERNEL || o->unwind == UNWIND_FP)
		return o->stack_mode;
	if (!target_objects(&s->t, &objs)) {
		unwind_add_objects(&s->uw, objs.p, objs.n);
		objlist_free(&objs);
	}
	if (!s->uw.rows) {
		if (o->unwind == UNWIND_DWARF)
			ht_err("--unwind dwarf: none of the target's objects has CFI (.eh_frame): frame pointers only");
		return HT_STACK_WALK;
	}
	s->t.maps_changed = maps_changed;
	s->t.maps_changed_arg = &s->uw;
	/* Programs executed later need room for their tables: a script's, a compiler driver's children. */
	s->uw.execs = o->several || s->t.script;
	s->ex.uw = &s->uw;
	return HT_STACK_DWARF;
}

/* MemTotal in bytes, 0 if unknown. */
static uint64_t mem_total(void)
{
	char *mi = read_text_file("/proc/meminfo"), *at = mi ? strstr(mi, "MemTotal:") : NULL;
	unsigned long long kib = 0;

	if (at && sscanf(at, "MemTotal: %llu kB", &kib) != 1)
		kib = 0;
	free(mi);
	return kib * 1024;
}

/*
 * What the limits cost: maps take kernel memory as the target fills them,
 * up to what --max-allocs and --max-stacks allow.  A ceiling beyond the
 * machine's memory is a mistake (--max-allocs 30000000 is 3.6 GiB); one
 * beyond an eighth of it is said, once, because it can come true.
 */
static int check_memory(struct session *s)
{
	struct tracer_memory m;
	uint64_t total = mem_total();

	tracer_memory(&s->tr, &m);
	if (!total || s->memory_said)
		return 0;
	s->memory_said = true;
	if (m.max > total) {
		ht_err("with every map full (--max-allocs %u, --max-stacks %u) the BPF maps would take %.0f MiB of "
		       "kernel memory, more than this machine's %.0f MiB: lower them", s->o->max_live,
		       s->o->max_stacks, m.max / 1048576.0, total / 1048576.0);
		return -1;
	}
	if (m.max > total / 8)
		ht_err("with every map full (--max-allocs %u, --max-stacks %u) the BPF maps could take %.0f MiB of "
		       "kernel memory, %.0f%% of this machine's; taken only as the target's blocks are tracked",
		       s->o->max_live, s->o->max_stacks, m.max / 1048576.0, 100.0 * m.max / total);
	return 0;
}

static int load_tracer(struct session *s)
{
	struct target *t = &s->t;
	double t0 = now_ms();
	int rc = -1;

	if (tracer_load(&s->tr, &s->cfg) || check_memory(s))
		goto out;
	rc = 0;
	if (s->cfg.stack_mode != HT_STACK_DWARF)
		goto out;
	rc = -1;
	if (unwind_load(&s->uw, &s->tr))
		goto out;
	/* -p: the process's code mappings are known now; a launched command's come with its first refresh. */
	if (t->maps && t->maps_changed)
		t->maps_changed(t->maps_changed_arg, t->maps, t->root);
	rc = 0;
out:
	s->ph.load += now_ms() - t0;
	return rc;
}

/*
 * -f html shows the heap at the peak beside the exact peak: a small fixed
 * step keeps that state within a few KiB of it even for a program whose
 * heap never reaches the default step's 1 MiB.
 */
static uint64_t peak_step(const struct trace_opts *o)
{
	return o->peak_step || o->format != FMT_HTML ? o->peak_step : HTML_PEAK_STEP;
}

/*
 * Load the BPF side and attach the plan, stepping down to what the kernel
 * has: uprobe_multi links, then uprobe sessions, are tried first.
 */
int session_attach(struct session *s, double t0)
{
	const struct trace_opts *o = s->o;
	struct target *t = &s->t;

	/*
	 * Sampling skips the return probes of unsampled calls with uprobe
	 * sessions.  With --follow-fork too, where they help only part of the
	 * time: every process's link runs on the shared probe, and another
	 * process's link asks for the return (the kernel runs no program for
	 * a link of another process, and that counts as wanting the return).
	 * So a process alone on its probes skips them (the target before its
	 * first fork and after its children ended: their links are closed at
	 * their exit, session_on_child_exit), and processes running at once do not.
	 */
	double t1 = now_ms();
	enum ht_stack_mode mode = plan_unwind(s);
	s->ph.tables = now_ms() - t1;
	/*
	 * uprobe_multi links came with Linux 6.6.  Known by the release: the
	 * fast path attaches no uprobe before its first trap, where finding
	 * out late left the record sites with no link at all on 6.1 (an empty
	 * profile).  A later kernel without them still falls back below.
	 */
	bool multi = kernel_at_least(6, 6);
	if (!multi)
		ht_info("no uprobe_multi before Linux 6.6: one perf event per probe");
	s->cfg = (struct tracer_config){ .tgid = t->pid, .max_live = o->max_live, .max_stacks = o->max_stacks,
					 .specs = s->plan.specs, .n_specs = s->plan.n, .multi = multi,
					 .session = multi && o->sample_rate != 0, .sample_rate = o->sample_rate,
					 .max_depth = o->max_depth, .stack_mode = mode,
					 .peak_step = peak_step(o), .follow_fork = o->several, .stub = s->in.n > 0 };
	for (int i = 0; i < o->n_syms; i++)
		s->cfg.arenas |= o->syms[i].spec.arena.n > 0;
	/* The injection decides (inject/ring.c); a preload it then finds unused costs start-up's CPU only. */
	s->cfg.batch = s->in.n > 0 && !ring_batch_off();
	s->cfg.maps = o->mmap;
	if (o->mmap && o->sample_rate && mode != HT_STACK_DWARF) {
		ht_err("--mmap with --sample-rate: the target's objects have no CFI to tell the allocator's own mappings by");
		return -1;
	}
	/* The programs the plan attaches now; a fallback to uprobes or a new program's allocator loads more. */
	for (int i = 0; i < s->plan.n; i++) {
		const struct probe *p = &s->plan.probes[i];
		if (!p->stub)
			s->cfg.progs |= p->kind == HT_SPEC_ALLOC ? 1u << PROG_ALLOC_ENTER | 1u << PROG_ALLOC_RETURN :
					p->kind == HT_SPEC_FREE ? 1u << PROG_FREE_ENTER : 1u << PROG_RESET_ENTER;
	}
	if (s->in.n)
		s->cfg.progs |= 1u << PROG_STUB_ALLOC | 1u << PROG_STUB_FREE;
	s->cfg.unwind_rows = s->cfg.stack_mode == HT_STACK_DWARF ? unwind_capacity(&s->uw) : 0;
	if (load_tracer(s))
		return -1;
	session_plan_walk(s);
	/*
	 * -p: every thread seized, so that an exec is followed; with
	 * --follow-fork, forks from now on wait for us (they are handled once
	 * monitoring starts).
	 */
	if (!t->launched && tracee_seize_all(&s->tc))
		return -1;
	if (!t->launched) {
		t1 = now_ms();
		if (session_inject_running(s))
			return -1;
		s->ph.inject += now_ms() - t1;
	}
	t1 = now_ms();
	for (int attached; (attached = probes_attach(&s->plan, &s->tr, t->pid));) {
		if (attached < 0)
			return -1;
		if (attached == 1) {
			ht_info("no uprobe_multi in this kernel: one perf event per probe");
			s->cfg.multi = false;
		} else {
			ht_info("no uprobe sessions in this kernel: unsampled calls take their return probe too");
		}
		s->cfg.session = false;
		tracer_close(&s->tr);
		if (load_tracer(s))
			return -1;
	}
	s->ph.attach = now_ms() - t1;
	if (!t->launched) {
		t1 = now_ms();
		session_python_running(s);
		s->ph.inject += now_ms() - t1;
	}
	if (o->sample_rate) {
		/* What an unsampled call pays: where no allocator keeps a uprobe, the stub decides in the process. */
		bool uprobed = false;
		for (int k = 0; k < s->plan.n; k++)
			uprobed |= s->plan.probes[k].kind == HT_SPEC_ALLOC && !s->plan.probes[k].stub;
		ht_info("sampling one allocation per %" PRIu64 " bytes on average; %s", o->sample_rate,
			!uprobed ? "unsampled calls stay in the process (the fast path)" :
			s->tr.n_session ? "unsampled calls skip their return probe (uprobe sessions)" :
					  "unsampled calls still take their return probe");
	}
	s->ex.upto[0] = s->plan.n;
	char what[8400];
	if (t->script)
		snprintf(what, sizeof(what), "%s, run by %s", t->name, t->image);
	else
		exec_describe(what, sizeof(what), t->name, t->image);
	ht_info("tracing PID %d (%s), attached in %.1f ms", t->pid, what, now_ms() - t0);
	/*
	 * Attached to a running process, a script must know when tracing has
	 * begun (to start its load, say): one line unless -q.  A launched
	 * command is traced from its first instruction, nothing to wait for.
	 */
	if (!t->launched && !o->quiet && !ht_verbose)
		ht_err("tracing PID %d (%s), %zu probes", t->pid, t->name, (size_t)s->plan.n);
	return 0;
}
