/*
 * --follow-fork: a forked child gets a process slot, the plan's probes and
 * a stub of its own (or uprobes on the stub's functions); its exec, its
 * end, its stub's counters, and at the end its profile.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "session/limits.h"
#include "session/procstub.h"
#include "session/state.h"
#include "symbolize/symbolize.h"
#include "util/log.h"
#include "util/procfs.h"

void session_stub_counters(void *arg, uint32_t proc, uint64_t counters[HT_COUNTER_MAX])
{
	struct session *s = arg;

	if (proc != HT_ALL_PROCS) {
		if (proc < HT_MAX_PROCS && s->kin[proc])
			inject_counters(s->kin[proc], counters);
		return;
	}
	for (uint32_t k = 0; k < HT_MAX_PROCS; k++)
		if (s->kin[k])
			inject_counters(s->kin[k], counters);
}

/*
 * --follow-fork: a child held before its first instruction inherited its
 * parent's memory: the redirected functions and the stub (disabled, its
 * data zeroed), or the functions as the file has them (the parent had no
 * stub, or had executed another program).  Give it a stub of its own, or
 * uprobes on the stub's functions.
 */
static void child_stub(struct session *s, pid_t child, uint32_t slot, uint32_t parent_slot)
{
	struct inject *par = s->kin[parent_slot], *kid;
	int rc = 1;

	if (par && par->base && par->enabled && (kid = calloc(1, sizeof(*kid)))) {
		if (!(rc = inject_child(kid, par, child, &s->tr)))
			s->kin[slot] = kid;
		else
			free(kid);
	}
	/* Uprobes on its copy of a jump would break it: an earlier heaptrace's jumps go first (inject_reclaim). */
	if (rc == 1 && inject_reclaim_held(child, &s->plan) >= 0 && !probes_attach_stubbed(&s->plan, &s->tr, child))
		s->stub_uprobes[slot] = true;
}

/* A followed child's stub ended with its image (exec) or its process; its counters' last reading stays. */
static void child_stub_gone(struct session *s, uint32_t slot)
{
	struct inject *kid = s->kin[slot];

	procstub_disarm(s, slot);
	if (slot && kid) {
		inject_free(kid);
		kid->base = 0;
		kid->enabled = false;
	}
}

/* --follow-fork: a child executed a new program (a compiler driver's cc1, say): the same for it. */
void session_on_child_exec(void *arg, struct tracee_child *k)
{
	struct session *s = arg;
	char root[64], *image = proc_exe(k->pid), what[8400];

	if (s->stopped)
		return;
	session_proc_root(s, k->pid, root, sizeof(root));
	/*
	 * The new image has no stub and no jump: a stub of its own once the
	 * loader has mapped the allocator, or (a static program, no stub to
	 * model it on) the stub's functions as uprobes.  A child that had
	 * their uprobes keeps them: a jump over one would break it.
	 */
	child_stub_gone(s, k->slot);
	if (!s->stub_uprobes[k->slot] && procstub_arm(s, k->pid, k->slot) &&
	    !probes_attach_stubbed(&s->plan, &s->tr, k->pid))
		s->stub_uprobes[k->slot] = true;
	exec_follow(&s->ex, k->pid, k->slot, k->maps, root);
	session_python_at_exec(s, k->pid, k->pid);
	exec_describe(what, sizeof(what), k->name, image);
	free(image);
	ht_info("following child PID %d: now %s", k->pid, what);
}

/* --follow-fork: a child ended: its links go, so that they cost the others nothing (tracer_forget_pid). */
void session_on_child_exit(void *arg, struct tracee_child *k)
{
	struct session *s = arg;

	if (!s->stopped)
		tracer_forget_pid(&s->tr, k->pid);
	child_stub_gone(s, k->slot);
}

/* --follow-fork: a child's last stop before its end: the last reading of its stub's counters. */
void session_on_child_exiting(void *arg, struct tracee_child *k)
{
	struct session *s = arg;
	uint64_t c[HT_COUNTER_MAX] = { 0 };

	if (s->kin[k->slot])
		inject_counters(s->kin[k->slot], c);
	session_python_exiting(s, k->pid);
}

/* --follow-fork, the end: each child's own stub off and its bytes back, as the target's. */
void session_remove_child_stubs(struct session *s)
{
	for (int k = 1; k < HT_MAX_PROCS; k++) {
		struct inject *kid = s->kin[k];
		struct remote r;
		int err;

		procstub_disarm(s, k);

		if (!kid || !kid->enabled || kid->shared)
			continue;
		if ((err = remote_stop(&r, kid->pid, session_traced_by_us, s))) {
			ht_info("fast path: cannot stop PID %d to take its stub out (%s)", kid->pid, strerror(-err));
		} else {
			inject_counters(kid, (uint64_t[HT_COUNTER_MAX]){ 0 });
			inject_remove(kid, &r);
			ht_info("fast path: PID %d: every redirected function restored; its stub stays mapped, unused",
				kid->pid);
		}
		remote_resume(&r);
		remote_free(&r);
	}
}

/* --follow-fork: a forked child, held before its first instruction, gets a slot and the plan's probes. */
uint32_t session_trace_child(void *arg, pid_t child, uint32_t parent_slot)
{
	struct session *s = arg;

	if (s->stopped)
		return 0;
	if (s->next_slot >= HT_MAX_PROCS) {
		ht_err("--follow-fork: %d processes traced already; PID %d is not", HT_MAX_PROCS, child);
		return 0;
	}
	uint32_t slot = s->next_slot;
	const struct inject *par = s->kin[parent_slot];
	/*
	 * A parent without a stub of ours may still hold an earlier
	 * heaptrace's jumps (it was forked from one that had them): the
	 * child's copy gets the file's bytes before its uprobes go on.
	 */
	bool own_stub = par && par->base && par->enabled;
	if (tracer_add_proc(&s->tr, child, slot, parent_slot) || (!own_stub && inject_reclaim_held(child, &s->plan) < 0) ||
	    probes_attach(&s->plan, &s->tr, child)) {
		ht_err("--follow-fork: cannot trace child PID %d", child);
		return 0;
	}
	child_stub(s, child, slot, parent_slot);
	timeline_proc(&s->tl, slot, child);
	s->ex.upto[slot] = s->plan.n;
	s->next_slot++;
	ht_info("following child PID %d", child);
	return slot;
}

/*
 * --merge: the followed children (src.tree), copied under the tracee's
 * lock (--http's thread calls this too); a live child's maps read now, so
 * that what it dlopen()ed since its last stop is named.
 */
int session_tree_of(void *arg, struct tree_proc **out, size_t *n)
{
	struct tracee *tc = &((struct session *)arg)->tc;
	struct tree_proc *v;
	bool *live;
	size_t k = 0;

	pthread_mutex_lock(&tc->lock);
	v = calloc(tc->n_kids + 1, sizeof(*v));
	live = calloc(tc->n_kids + 1, sizeof(*live));
	for (size_t i = 0; v && live && i < tc->n_kids; i++) {
		const struct tracee_child *c = &tc->kids[i];
		if (c->slot == UINT32_MAX || c->slot == 0)
			continue;
		/* Read again only while it runs: after its exit's stop, maps may be half torn down. */
		live[k] = !c->exited && !__atomic_load_n(&c->maps_final, __ATOMIC_ACQUIRE);
		v[k++] = (struct tree_proc){ .slot = c->slot, .pid = c->pid, .maps = strdup(c->maps ? c->maps : ""),
					     .name = c->name ? strdup(c->name) : NULL };
	}
	pthread_mutex_unlock(&tc->lock);
	if (!v || !live) {
		free(v);
		free(live);
		return -1;
	}
	for (size_t i = 0; i < k; i++) {
		char *m;
		if (live[i] && (m = proc_maps(v[i].pid)) && *m) {
			free(v[i].maps);
			v[i].maps = m;
		} else if (live[i]) {
			free(m);
		}
	}
	free(live);
	*out = v;
	*n = k;
	return 0;
}

/* Each followed child's profile, beside the target's: FILE.PID, or heaptrace.PID.EXT. */
int session_write_children(struct session *s)
{
	const struct trace_opts *o = s->o;
	struct tracee *tc = &s->tc;
	int rc = 0;

	tracee_refresh_maps(tc);
	for (size_t i = 0; i < tc->n_kids; i++) {
		const struct tracee_child *k = &tc->kids[i];
		struct profile p;
		char path[4200];

		if (k->slot == UINT32_MAX || k->slot == 0)
			continue;
		char tag[16];
		snprintf(tag, sizeof(tag), "%d", k->pid);
		if (!o->output)
			snprintf(path, sizeof(path), "heaptrace.%d.%s", k->pid, format_info(o->format)->ext);
		else if (!output_tagged_path(path, sizeof(path), o->output, tag, o->format))
			snprintf(path, sizeof(path), "%s.%d", o->output, k->pid);
		if (profile_take(&s->src, k->slot, k->pid, k->maps, &p)) {
			rc = 1;
			continue;
		}
		p.name = k->name;
		p.ended = k->exited;
		/* One symbolizer for the suppressions and the output (session_write_profiles() says why). */
		struct symbolizer *sym = o->suppress ? sym_open(p.maps ? p.maps : "") : NULL;
		suppress_apply(o->suppress, &p, sym);
		oom_say(&s->oom, &p, k->pid, false, false, false);
		if (limits_check(&o->limits, &p))
			s->over_limit = true;
		if (p.totals.execs)
			ht_err("child PID %d executed a new program (%s): %" PRIu64 " live blocks of the old one were "
			       "dropped; its profile is the new one's", k->pid, k->name ? k->name : "?",
			       (uint64_t)p.totals.exec_dropped);
		int err = output_file_sym(path, o->format, &p, o->value, o->top, sym);
		if (err)
			ht_err("cannot write the profile of child PID %d to %s: %s", k->pid, path, strerror(errno));
		else
			ht_err("child PID %d (of PID %d): profile in %s", k->pid, k->parent, path);
		rc |= err ? 1 : 0;
		if (sym)
			sym_close(sym);
		profile_free(&p);
	}
	if (tc->not_followed)
		ht_err("--follow-fork: %zu child processes were not traced", tc->not_followed);
	return rc;
}
