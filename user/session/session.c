/*
 * The tracing lifecycle.  Order matters throughout: everything that can
 * fail is set up before a launched command runs its first instruction;
 * probes go on in an order that loses no event (probe/plan.c) and come off
 * in the reverse one; the profile is read after the BPF side stopped
 * counting, so it is the heap at the stop.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/utsname.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "util/kernel.h"
#include "output/output.h"
#include "output/outfile.h"
#include "inject/inject.h"
#include "inject/ring.h"
#include "probe/allocator.h"
#include "probe/plan.h"
#include "process/target.h"
#include "process/tracee.h"
#include "profile/profile.h"
#include "profile/timeline.h"
#include "serve/http.h"
#include "serve/snapshot.h"
#include "symbolize/symbolize.h"
#include "session/exec.h"
#include "session/monitor.h"
#include "session/procset.h"
#include "session/state.h"
#include "tracer/drain.h"
#include "tracer/tracer.h"
#include "unwind/procs.h"
#include "util/procfs.h"
#include "util/log.h"

/* The malloc family of the allocator the target uses (and libc's), and the --sym functions. */
static int plan_probes(struct session *s)
{
	const struct trace_opts *o = s->o;
	struct objlist objs;
	char *primary = NULL, *libc = NULL;
	int err = -1;

	probes_init(&s->plan, o->probe_at_entry);
	/* The stacks' names come from the debug info --sym found static functions in. */
	sym_set_debug_dir(o->debug_dir);
	if (target_objects(&s->t, &objs))
		return -1;
	if (!o->no_libc &&
	    (allocator_choose(&objs, o->lib, &primary, &libc) || probes_add_malloc(&s->plan, primary, true) ||
	     (libc && probes_add_malloc(&s->plan, libc, false))))
		goto out;
	/*
	 * A spec the program lacks may be in one it executes (a shim, a
	 * wrapper script): an error at the end if no image had it, or now
	 * when nothing will run (--list-probes).
	 */
	if (specs_plan(&s->specs, &s->plan, &objs, objs.n ? objlist_name(&objs, 0) : s->t.exe)) {
		s->bad_input = true;
		goto out;
	}
	if (specs_missing(&s->specs, o->list_probes) && o->list_probes) {
		s->bad_input = true;
		goto out;
	}
	for (int i = 0; o->no_inject && i < s->specs.py.n; i++)
		if (s->specs.py.s[i].inlined) {
			ht_info("python: the build inlines its allocator where its table holds the default: those calls are "
				"not seen (--no-inject: nothing is written into the target to bypass them)");
			break;
		}
	err = 0;
out:
	free(primary);
	free(libc);
	objlist_free(&objs);
	return err;
}

/*
 * The in-process fast path takes the malloc family where it can; not with
 * the kernel's own stack walk (it would walk the stub's stack, not the
 * caller's).  Under --follow-fork, followed children get a stub of their
 * own at their fork (session_trace_child), exact or sampled.
 */
static void plan_inject(struct session *s)
{
	const struct trace_opts *o = s->o;
	const char *why = o->no_inject ? "--no-inject" : o->stack_mode == HT_STACK_KERNEL ? "--stack-capture kernel" : NULL;

	if (why) {
		ht_info("fast path: off (%s): uprobes on every function", why);
		return;
	}
	inject_plan(&s->in, &s->plan, s->t.pid, o->sample_rate, o->max_live);
}

/* The root prefix that reaches a process's files: our own for a launched command's tree. */
void session_proc_root(const struct session *s, pid_t pid, char *buf, size_t len)
{
	if (s->t.launched)
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len, "/proc/%d/root", pid);
}

/*
 * The target executed a new program (after a launched command's own
 * execve: its script's interpreter, a wrapper like env, a shim): trace
 * that one, with its tables, its allocator and its name.
 */
static void follow_target_exec(struct session *s)
{
	struct target *t = &s->t;
	char root[64], what[8400];

	session_proc_root(s, t->pid, root, sizeof(root));
	target_exec(t);
	target_refresh_maps(t);
	exec_follow(&s->ex, t->pid, 0, t->maps, root);
	/* Only now: whoever reads this line may rely on the new program's tables and probes. */
	exec_describe(what, sizeof(what), t->name, t->image);
	ht_info("tracing PID %d: now %s", t->pid, what);
}

bool session_python_at_exec(struct session *s, pid_t pid, pid_t tid)
{
	struct remote r;
	bool stepped = false;

	pytables_forget(&s->pyt, pid);
	if (!s->specs.py.n || s->o->no_inject || s->stopped)
		return false;
	double t0 = now_ms();
	/*
	 * At the exec stop the execve has not returned: a system call made for
	 * us now would find its number overwritten by execve's result.  One
	 * step first ends the execve (the trap comes at its exit, before the
	 * new program's first instruction).
	 */
	if (!remote_adopt(&r, pid, tid) && !remote_step(&r)) {
		stepped = true;
		pytables_redirect(&s->pyt, &s->specs.py, &r);
		remote_sync(&r);
	}
	remote_free(&r);
	s->ph.inject += now_ms() - t0;
	return stepped;
}

/* -p: every thread stopped while CPython's inlined table slots are redirected. */
static void python_running(struct session *s)
{
	struct remote r;
	int err;

	if (!s->specs.py.n || s->o->no_inject)
		return;
	if ((err = remote_stop(&r, s->t.pid, session_traced_by_us, s)))
		ht_info("python: cannot stop the threads of PID %d (%s): its inlined allocator calls are not seen",
			s->t.pid, strerror(-err));
	else
		pytables_redirect(&s->pyt, &s->specs.py, &r);
	remote_resume(&r);
	remote_free(&r);
}

/* The end: each process's table slots back, with its threads stopped. */
static void python_restore(struct session *s)
{
	for (pid_t pid; (pid = pytables_next_pid(&s->pyt));) {
		struct remote r;
		int err = remote_stop(&r, pid, session_traced_by_us, s);

		if (err)
			ht_info("python: cannot stop PID %d to restore its allocator tables (%s): they keep their jumps, "
				"which still work", pid, strerror(-err));
		else
			pytables_restore(&s->pyt, &r);
		pytables_forget(&s->pyt, pid);
		remote_resume(&r);
		remote_free(&r);
	}
}

/*
 * The target's exec: a launched command's first is its own (planned
 * before it started); later ones are followed.  Then the fast path: arm
 * the loader's breakpoint (or install now: a static program).
 */
static void on_exec(void *arg, pid_t tid)
{
	struct session *s = arg;
	struct remote r;

	if (!s->stopped && (!s->t.launched || s->target_execs))
		follow_target_exec(s);
	s->target_execs++;
	bool stepped = session_python_at_exec(s, s->t.pid, tid);
	if (!s->in.n)
		return;
	double t0 = now_ms();
	/* A later exec replaced the image: the stub and its patches went with it; the same functions again. */
	if (s->in.done)
		inject_reset(&s->in);
	s->in.pid = s->t.pid;
	if (!remote_adopt(&r, s->t.pid, tid)) {
		/* A static program: installed now, by system calls, which need execve ended first (as above). */
		if (inject_arm(&s->in, &r)) {
			if (stepped || !remote_step(&r))
				inject_install(&s->in, &r, &s->plan, &s->tr);
			/* Every function given back (a failed install), or some (another tool's breakpoint on one). */
			probes_attach_fallback(&s->plan, &s->tr, s->t.pid);
		}
		remote_sync(&r);
		remote_free(&r);
	}
	s->ph.inject += now_ms() - t0;
}

/* The target's last moment with its memory: the stub's counters (its losses) as they end. */
static void on_exiting(void *arg)
{
	struct session *s = arg;

	if (s->in.base)
		inject_counters(&s->in, (uint64_t[HT_COUNTER_MAX]){ 0 });
}

static bool on_trap(void *arg, pid_t tid)
{
	struct session *s = arg;
	double t0 = now_ms();
	bool ours = inject_on_trap(&s->in, tid, &s->plan, &s->tr) == 1;

	s->ph.inject += now_ms() - t0;
	return ours;
}

bool session_traced_by_us(void *arg, pid_t tid)
{
	struct session *s = arg;

	/* -p without --follow-fork: the threads seized (one that could not be runs on, untraced). */
	if (s->tc.all && !s->tc.follow)
		return s->tc.seized && tracee_has(&s->tc, tid);
	return s->tc.seized && (s->tc.follow || tid == s->t.pid);
}

/*
 * -p: every thread stopped while the stub goes in; what it does not take
 * gets uprobes.  Without a stub of ours, an earlier heaptrace's jumps are
 * taken out all the same before any uprobe goes on them.  -1: one still
 * jumps (printed): tracing it would crash it.
 */
static int inject_running(struct session *s)
{
	struct remote r;
	int err, rc = 0;

	if (!s->in.n)
		return inject_reclaim_running(s->t.pid, &s->plan, session_traced_by_us, s) < 0 ? -1 : 0;
	/* The drain's object verified before the threads stop, not while they wait. */
	drain_ready(&s->tr);
	if ((err = remote_stop(&r, s->t.pid, session_traced_by_us, s))) {
		ht_info("fast path: cannot stop the threads of PID %d (%s): uprobes instead", s->t.pid, strerror(-err));
		for (int i = 0; i < s->plan.n; i++)
			s->plan.probes[i].stub = false;
	} else {
		inject_install(&s->in, &r, &s->plan, &s->tr);
	}
	remote_resume(&r);
	remote_free(&r);
	if (err)
		rc = inject_reclaim_running(s->t.pid, &s->plan, session_traced_by_us, s) < 0 ? -1 : 0;
	return rc;
}

/* The end: the stub off and every byte back, with the threads stopped. */
static void remove_inject(struct session *s)
{
	struct remote r;
	int err;

	session_remove_child_stubs(s);
	if (!s->in.base || s->t.exited)
		return;
	if ((err = remote_stop(&r, s->t.pid, session_traced_by_us, s))) {
		ht_err("fast path: cannot stop PID %d to take the stub out (%s): it stays, disabled only if the "
		       "process can still be written", s->t.pid, strerror(-err));
	} else {
		inject_remove(&s->in, &r);
		ht_info("fast path: every redirected function restored; the stub stays mapped, unused");
	}
	remote_resume(&r);
	if (r.exited) {
		s->t.exited = true;
		s->t.status = r.exit_status;
	}
	remote_free(&r);
}

/* The traced command line, for the record in profiles. */
static char *command_line(const struct trace_opts *o, const struct target *t)
{
	char *s = NULL, path[64];
	size_t len = 0;
	FILE *m = open_memstream(&s, &len);

	if (!m)
		return NULL;
	if (o->argv) {
		for (char **a = o->argv; *a; a++)
			fprintf(m, "%s%s", a == o->argv ? "" : " ", *a);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/cmdline", t->pid);
		FILE *f = fopen(path, "re");
		int c, pending = 0;
		/* Arguments end in NUL: a space only between two of them. */
		while (f && (c = fgetc(f)) != EOF) {
			if (!c) {
				pending = 1;
				continue;
			}
			if (pending)
				fputc(' ', m);
			pending = 0;
			fputc(c, m);
		}
		if (f)
			fclose(f);
	}
	fclose(m);
	return s;
}

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
static int attach(struct session *s, double t0)
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
	s->cfg.batch = s->in.n > 0 && !o->sample_rate && !ring_batch_off();
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
		if (inject_running(s))
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
		python_running(s);
		s->ph.inject += now_ms() - t1;
	}
	if (o->sample_rate)
		ht_info("sampling one allocation per %" PRIu64 " bytes on average; %s", o->sample_rate,
			s->tr.session ? "unsampled calls skip their return probe (uprobe sessions)" :
					"unsampled calls still take their return probe");
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

/* -i: the next snapshot, its time marked on the timeline. */
/*
 * The monitor's poll: a cgroup's new processes, and whether the fast
 * path's recorded calls arrive.  True (stop tracing) when a second after
 * the stub's first recorded call nothing of it has: the profile would be
 * an empty heap, said as nothing.
 */
static bool session_poll(void *arg)
{
	struct session *s = arg;
	uint64_t c[HT_COUNTER_MAX];
	struct utsname u;

	if (s->o->cgroup)
		procset_poll(s);
	if (!s->in.n || s->stopped)
		return false;
	tracer_counters(&s->tr, 0, c);
	if (!inject_check_delivery(&s->in, c, now_ms() / 1000.0))
		return false;
	ht_err("fast path: PID %d's recorded calls do not reach heaptrace on Linux %s (none in a second): stopping, "
	       "the profile would be empty (stub_undelivered); --no-inject traces it with uprobes alone",
	       s->in.pid, uname(&u) ? "(unknown)" : u.release);
	return true;
}

static void snapshot_and_mark(void *arg)
{
	struct session *s = arg;

	if (s->src.timeline)
		timeline_mark(&s->tl);
	snapshot_tick(s->ss);
}

/*
 * -f html: the heap over time, sampled from the start at 25 points a
 * second or once per -i interval when that is finer, and the live blocks
 * by allocation time at the end.
 */
static int plan_timeline(struct session *s)
{
	const struct trace_opts *o = s->o;
	double period = o->interval > 0 && o->interval < TL_PERIOD ? o->interval : TL_PERIOD;

	if (o->format != FMT_HTML)
		return 0;
	s->src.timeline = &s->tl;
	s->src.live_bins = HTML_LIVE_BINS;
	return timeline_start(&s->tl, &s->tr, period, s->t.pid);
}

/* --list-probes: on stdout, or into -o like a profile. */
static int list_probes(struct session *s)
{
	struct outfile of;
	FILE *f = stdout;

	if (s->o->output && !(f = outfile_begin(&of, s->o->output))) {
		if (errno != ECANCELED)
			ht_err("cannot write %s: %s", s->o->output, strerror(errno));
		return 1;
	}
	probes_print(&s->plan, f);
	if (s->o->output && outfile_commit(&of)) {
		ht_err("cannot write %s: %s", s->o->output, strerror(errno));
		return 1;
	}
	return 0;
}

/* Where the output goes is checked now, not after an hour of tracing. */
static int check_output(const struct trace_opts *o)
{
	/* Checked only: the file is replaced when there is a profile to put in it. */
	if (o->output && !o->interval && outfile_check(o->output))
		return -1;
	if (((o->interval || o->interval_bytes || o->snapshot_at_rss) && o->output) || o->at_peak) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", o->output ? o->output : ".");
		char *slash = o->output ? strrchr(dir, '/') : NULL;
		if (slash)
			*slash = '\0';
		else if (o->output)
			snprintf(dir, sizeof(dir), ".");
		if (access(*dir ? dir : "/", W_OK)) {
			ht_err("cannot write files in %s: %s", *dir ? dir : "/", strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Trace from the moment the target runs until the stop; then the profiles. */
static int trace(struct session *s, double t0)
{
	struct trace_opts *o = s->o;
	struct target *t = &s->t;
	struct http_server *http = NULL;
	char prefix[4096];
	int rc = 1;

	/*
	 * The listeners first: a port in use or a bad socket path fails before
	 * the target is stopped or written (the profiles are served from
	 * http_ready on; until then 503).
	 */
	struct http_config hc = { .listen = o->http, .n_listen = o->n_http, .token = o->http_token,
				  .cert = o->http_cert, .key = o->http_key };
	if (o->n_http && !(http = http_start(&hc, t)))
		goto kill_child;
	if (attach(s, t0))
		goto kill_child;
	procset_adopt(s);
	s->src = (struct profile_source){ .tr = &s->tr, .min_age = o->min_age, .start_ns = monotonic_ns(),
					  .command = command_line(o, t), .more_counters = session_stub_counters,
					  .more_arg = s, .tree = o->merge ? session_tree_of : NULL, .tree_arg = s };
	struct snapshots ss = { .fmt = o->format, .value = o->value, .top = o->top, .diff = o->diff,
				.src = &s->src, .t = t };
	s->ss = &ss;
	/* Numbered snapshots come from -i and also from SIGUSR1 and --interval-bytes (session/volume.c). */
	if (o->output)
		snprintf(prefix, sizeof(prefix), "%s", o->output);
	else
		snprintf(prefix, sizeof(prefix), "heaptrace.%d", t->pid);
	ss.prefix = prefix;
	if (o->interval)
		ss.live = o->format == FMT_TOP && !o->output && isatty(STDOUT_FILENO);

	/* Everything that can fail is set up before a launched command runs its first instruction. */
	if (plan_timeline(s))
		goto kill_child;
	http_ready(http, &s->src);
	if (target_start(t)) {
		ht_err("cannot start %s", t->exe);
		goto kill_child;
	}

	session_watch_start(s);
	double t1 = now_ms();
	struct stop st = monitor_run(&s->tc, o->duration, o->interval, snapshot_and_mark, s);
	s->stopped = true;
	/* The fast path's installation happened during the run, at the target's traps. */
	s->ph.run = now_ms() - t1 - s->ph.inject;
	t1 = now_ms();
	monitor_hold_signals();
	http_stop(http);
	if (!t->exited)
		target_refresh_maps(t);
	remove_inject(s);
	python_restore(s);
	if (t->launched && t->exited && !o->several)
		tracer_release_at_exit();
	tracer_detach(&s->tr);
	s->ph.detach = now_ms() - t1;
	/* The end of the timeline: the heap at the stop (and the final snapshot's time). */
	if (s->src.timeline) {
		timeline_stop(&s->tl);
		if (o->interval)
			timeline_mark(&s->tl);
	}
	if (st.why == STOP_DURATION)
		ht_info("stopped after %g s", o->duration);

	/*
	 * A spec no program had is bad input (exit status 2), said at the end
	 * since a later program could have had it; like any failed run, it
	 * writes no profile (-o keeps what it held).
	 */
	bool missing = specs_missing(&s->specs, true) > 0;
	if (missing)
		snapshots_free(&ss);
	else
		rc = session_write_profiles(s, &ss);
	if (t->launched) {
		/* Like time(1): the command runs to its end and its status is ours. */
		if (!t->exited && st.why == STOP_SIGNAL && st.sent_to_us)
			kill(t->pid, st.signo);
		monitor_forward_to(t->pidfd);
		tracee_reap(&s->tc, true);
	}
	/* A limit exceeded is heaptrace's own verdict, above the command's status; a failure of heaptrace's above both. */
	int status = t->launched ? target_exit_code(t) : 0;
	if (missing)
		rc = 2;
	/* The profile of a fast path that delivered nothing is empty, not the program's heap: heaptrace failed. */
	if (!rc && st.why == STOP_UNDELIVERED)
		rc = 1;
	if (!rc && s->over_limit) {
		if (status)
			ht_err("(the command's own exit status was %d)", status);
		rc = HT_EXIT_LIMIT;
	}
	if (!rc)
		rc = status;
	return rc;

kill_child:
	http_stop(http);
	if (t->launched && t->pid > 0 && !t->exited) {
		kill(t->pid, SIGKILL);
		tracee_reap(&s->tc, true);
	}
	return 1;
}

int session_run(struct trace_opts *o)
{
	struct session s = { .o = o, .t = { .go_fd = -1, .pidfd = -1 }, .next_slot = 1 };
	struct target *t = &s.t;
	double t0 = now_ms();
	int rc = 1;

	s.ph.start = t0;
	if (procset_target(o))
		return 1;
	o->several = o->follow_fork || o->n_pids > 1;
	s.tc = (struct tracee){ .t = t, .follow = o->follow_fork, .on_fork = session_trace_child, .arg = &s };
	pthread_mutex_init(&s.tc.lock, NULL);
	specs_init(&s.specs, o);
	s.ex = (struct exec_follow){ .o = o, .plan = &s.plan, .tr = &s.tr, .specs = &s.specs };
	s.in.file_fd = -1;
	s.in.share_fd = -1;
	s.kin[0] = &s.in;
	if (check_output(o))
		return 1;
	if (monitor_init()) {
		ht_err("cannot set up signal handling: %s", strerror(errno));
		goto done;
	}
	if ((rc = o->argv ? target_prepare(t, o->argv) : target_attach(t, o->pid)))
		goto done;
	if (o->user && (rc = target_set_user(t, o->user)))
		goto done;
	/* A spec naming what is not there is bad input, like a bad spec: exit status 2. */
	if (plan_probes(&s)) {
		rc = s.bad_input ? 2 : 1;
		goto done;
	}
	if (o->list_probes) {
		rc = list_probes(&s);
		goto done;
	}
	plan_inject(&s);
	/* Execs are followed everywhere: a launched command, a -p target (all its threads seized), a --follow-fork tree. */
	s.tc.on_exec = on_exec;
	s.tc.on_exiting = on_exiting;
	s.tc.hook_arg = &s;
	s.tc.on_poll = session_poll;
	s.tc.outlive = o->n_pids > 1 || o->cgroup;
	s.tc.all = !o->argv;
	if (o->several) {
		s.tc.on_child_exec = session_on_child_exec;
		s.tc.on_child_exit = session_on_child_exit;
		s.tc.on_child_exiting = session_on_child_exiting;
	}
	if (s.in.n)
		s.tc.on_trap = on_trap;
	/* The command's stdout moves to stderr only when the profile (or the live view) takes stdout. */
	bool profile_on_stdout = !o->output && (!o->interval || (o->format == FMT_TOP && isatty(STDOUT_FILENO)));
	if (o->argv) {
		if ((rc = target_launch(t, o->argv, profile_on_stdout)))
			goto done;
		/* On failure the command, still before its exec, ends when its pipe closes. */
		if (tracee_seize_launched(&s.tc)) {
			rc = 1;
			goto done;
		}
	}
	s.ph.plan = now_ms() - t0;
	rc = trace(&s, t0);
done:
	free((char *)s.src.command);
	timeline_free(&s.tl);   /* its thread reads the maps: before they close */
	tracer_close(&s.tr);
	probes_free(&s.plan);
	target_free(t);
	tracee_free(&s.tc);
	inject_free(&s.in);
	for (int k = 1; k < HT_MAX_PROCS; k++)
		if (s.kin[k]) {
			inject_free(s.kin[k]);
			free(s.kin[k]);
		}
	unwind_free(&s.uw);
	specs_free(&s.specs);
	return rc;
}
