/*
 * The fast path in the target, as the lifecycle drives it: the stub put
 * into a running process with its threads stopped (a launched command's
 * comes at its exec, session.c), taken out at the end, and CPython's
 * inlined allocator table slots pointed at jumps of their own and given
 * back.  What cannot go in falls back to uprobes.
 */
#include <string.h>

#include "inject/inject.h"
#include "inject/pytables.h"
#include "session/state.h"
#include "tracer/drain.h"
#include "util/log.h"

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
void session_python_running(struct session *s)
{
	struct remote r;
	int err;

	if (!s->specs.py.n || s->o->no_inject)
		return;
	if ((err = remote_stop(&r, s->t.pid, session_traced_by_us, s)))
		ht_info("python: cannot stop the threads of PID %d (%s): its inlined allocator calls are not seen",
			s->t.pid, strerror(-err));
	else if (pytables_redirect(&s->pyt, &s->specs.py, &r) && s->in.pid == s->t.pid)
		pytables_point(&s->pyt, &r, inject_fast_entry_of, &s->in);
	remote_resume(&r);
	remote_free(&r);
}

/* The end: each process's table slots back, with its threads stopped. */
void session_python_restore(struct session *s)
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
 * -p: every thread stopped while the stub goes in; what it does not take
 * gets uprobes.  Without a stub of ours, an earlier heaptrace's jumps are
 * taken out all the same before any uprobe goes on them.  -1: one still
 * jumps (printed): tracing it would crash it.
 */
int session_inject_running(struct session *s)
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
void session_remove_inject(struct session *s)
{
	struct remote r;
	int err;

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
