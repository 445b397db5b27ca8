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

#include "output/output.h"
#include "output/outfile.h"
#include "inject/inject.h"
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
#include "session/procstub.h"
#include "session/state.h"
#include "tracer/tracer.h"
#include "unwind/procs.h"
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
	if (s->specs.py.frames.on && o->no_inject)
		ht_err("Python frames are off: the stub reads them, and --no-inject writes nothing into the target; "
		       "stacks stay native");
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
 * At the target's exec, its new program's functions (a shim's real
 * interpreter: CPython's allocator behind env and pyenv's bash) join the
 * stub's, as the first program's did: installed with the new image's stub.
 */
static void stub_new_probes(void *arg, int from)
{
	struct session *s = arg;

	/*
	 * Only beside functions the first program gave the stub: a session
	 * whose stub had none (--no-libc through a wrapper) set up none of its
	 * machinery, and its new functions keep uprobes, as before.
	 */
	if (s->in.n)
		inject_plan_more(&s->in, &s->plan, from);
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
	s->ex.to_stub = stub_new_probes;
	s->ex.to_stub_arg = s;
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

static void loader_done(void *arg)
{
	struct session *s = arg;

	target_refresh_maps(&s->t);
}

/*
 * The launched program's loader, watched until it has mapped what the
 * program needs: a breakpoint written on its r_brk (inject_arm()), or,
 * where some of its functions keep uprobes, a uprobe of ours there
 * (loader_state sends HT_LOADER_SIGNAL, taken in on_signal()).  In a
 * process that has uprobes the kernel takes a breakpoint's trap for
 * itself when another uprobe sits on that byte (a killed heaptrace's,
 * whose unregistering failed: "leaking uprobe" in the kernel's log, until
 * the next boot; another tool's): the program then ran on untraced where
 * the stub was to go (scenario fastpath's fp_um).  A uprobe of ours there
 * is called all the same.  Not everywhere: a uprobe's hit maps the
 * kernel's page for stepping ([uprobes]) before the libraries, which then
 * load a page lower than they would untraced; nor where only the maps'
 * refresh waits for it (no stub: watch_loader()), which a lost trap only
 * delays.  -1: a static program (nothing to wait for).
 */
static int arm_loader(struct session *s, struct remote *r)
{
	char loader[4300];
	uint64_t off;
	bool uprobes = false;

	for (int k = 0; s->in.n && k < s->plan.n; k++)
		uprobes |= !s->plan.probes[k].stub;
	tracer_unhook(&s->arm_hooks[0]);
	s->in.hooked = false;
	if (uprobes && procstub_signal_reaches(s->t.pid) && !inject_arm_hook(&s->in, loader, sizeof(loader), &off)) {
		if (!tracer_hook_loader(&s->tr, loader, off, s->t.pid, &s->arm_hooks[0]))
			return 0;
		s->in.armed = s->in.hooked = false;
	}
	return inject_arm(&s->in, r);
}

/*
 * Without the stub, the BPF side walks with the CFI tables of the objects
 * in its module index, which the maps' refresh fills: a library the loader
 * maps after the exec would be missing from it until the next refresh, and
 * the walks of every call before it stop short (46 of t_shop's first 1,000
 * operator new under QEMU).  So the loader's breakpoint, as for the stub,
 * only to refresh the maps before any of the program's code runs.
 */
static void watch_loader(struct session *s, pid_t tid)
{
	struct remote r;

	if (s->cfg.stack_mode != HT_STACK_DWARF || s->stopped || remote_adopt(&r, s->t.pid, tid))
		return;
	s->in.pid = s->t.pid;
	s->in.on_loaded = loader_done;
	s->in.on_loaded_arg = s;
	arm_loader(s, &r);              /* a static program: nothing to wait for */
	remote_sync(&r);
	remote_free(&r);
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
	if (!s->in.n) {
		watch_loader(s, tid);
		return;
	}
	double t0 = now_ms();
	/* A later exec replaced the image: the stub and its patches went with it; the same functions again. */
	if (s->in.done)
		inject_reset(&s->in);
	s->in.pid = s->t.pid;
	if (!remote_adopt(&r, s->t.pid, tid)) {
		/* A static program: installed now, by system calls, which need execve ended first (as above). */
		if (arm_loader(s, &r)) {
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
	session_python_exiting(s, s->t.pid);
}

static bool on_signal(void *arg, pid_t tid, int sig)
{
	struct session *s = arg;
	double t0 = now_ms();
	bool ours;

	if (sig == HT_LOADER_SIGNAL && s->in.hooked && s->in.armed && tid == s->t.pid && procstub_from_kernel(tid)) {
		/* The launched program's loader (arm_loader()): done, the hook goes, and what the stub did not take gets uprobes. */
		ours = inject_on_loader(&s->in, tid, &s->plan, &s->tr) == 1;
		if (!s->in.armed) {
			tracer_unhook(&s->arm_hooks[0]);
			s->in.hooked = false;
			probes_attach_fallback(&s->plan, &s->tr, s->t.pid);
		}
	} else {
		ours = sig == SIGTRAP ? inject_on_trap(&s->in, tid, &s->plan, &s->tr) == 1 : procstub_on_signal(s, tid, sig);
	}

	s->ph.inject += now_ms() - t0;
	return ours;
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
	struct utsname u;

	if (s->o->cgroup)
		procset_poll(s);
	/* The target is slot 0. */
	if (!s->in.n || s->stopped || !inject_check_delivery(&s->in, &s->tr, 0, now_ms() / 1000.0))
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
	if (session_attach(s, t0))
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
	session_watch_stop(s);
	/* The fast path's installation happened during the run, at the target's traps. */
	s->ph.run = now_ms() - t1 - s->ph.inject;
	t1 = now_ms();
	monitor_hold_signals();
	http_stop(http);
	if (!t->exited)
		target_refresh_maps(t);
	session_remove_child_stubs(s);
	session_remove_inject(s);
	session_python_restore(s);
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
	/* Also without the stub: the loader's breakpoint of watch_loader(). */
	s.tc.on_signal = on_signal;
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
