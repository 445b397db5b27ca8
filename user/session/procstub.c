/*
 * The fast path of a process adopted running (procset.c: -p's others, a
 * cgroup's, the descendants already running under --follow-fork): a stub
 * of its own, mapped and patched as the target's was (it was not forked
 * from a process with one, so nothing is inherited), for the functions the
 * target's stub took: all of them or none, so that the plan's choice
 * (p->stub: no uprobe) holds for every process.  A process that cannot
 * have one (its seccomp filter refuses memfd_create or mmap, its threads
 * cannot be stopped, another libc, a static program) gets uprobes on
 * those functions, with one line saying why; it never fails the others.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ptrace.h>

#include "session/procstub.h"
#include "session/state.h"
#include "util/log.h"
#include "util/procfs.h"

/* Why the target's stub cannot be copied (NULL: it can): every function it took still the stub's in the plan. */
static const char *no_model(const struct session *s)
{
	if (s->o->no_inject || s->o->stack_mode == HT_STACK_KERNEL)
		return "";      /* the fast path is off for every process: nothing to say */
	if (!s->in.enabled)
		return "the target has no stub to model it on (-v says why)";
	for (int i = 0; i < s->in.n; i++)
		if (!s->plan.probes[s->in.fns[i].probe].stub)
			return "the target's stub is gone (it executed another program)";
	return NULL;
}

/* pid's stub, made on the target's (not yet in it); NULL: out of memory. */
static struct inject *model(struct session *s, pid_t pid, uint32_t slot)
{
	struct inject *kid = calloc(1, sizeof(*kid));

	if (!kid)
		return NULL;
	/*
	 * The target's walk, with CFI tables a mapping of its own (walk.c):
	 * its stacks are walked in it and its events batched in a ring of its
	 * own, as the target's are.
	 */
	*kid = (struct inject){ .pid = pid, .sample_rate = s->in.sample_rate, .max_live = s->in.max_live,
				.file_fd = -1, .share_fd = -1, .whole = true, .n = s->in.n, .walk = s->in.walk,
				.max_depth = s->in.max_depth, .min_frame_addr = s->in.min_frame_addr };
	for (int i = 0; i < s->in.n; i++)
		kid->fns[i] = (struct inject_fn){ .probe = s->in.fns[i].probe, .len = s->in.fns[i].len,
						  .skip = s->in.fns[i].skip };
	session_walk_share(s, kid, slot);
	session_walk_python(s, kid);
	return kid;
}

/* A stub for pid, the target's functions; NULL and why (which is set) when none. */
static struct inject *install(struct session *s, pid_t pid, uint32_t slot, char *why, size_t len)
{
	struct inject *kid = model(s, pid, slot);
	struct remote r;
	int err = 0;

	if (!kid) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	if ((err = remote_stop(&r, pid, session_traced_by_us, s)))
		snprintf(why, len, "cannot stop its threads: %s", strerror(-err));
	else if (!remote_can_call(&r))
		/* Its fork event is the ptrace loop's to take, after this adoption: the child is followed there. */
		snprintf(why, len, "caught while it forks (its threads stopped at the fork, for heaptrace to follow)");
	else if (inject_install(kid, &r, &s->plan, &s->tr))
		snprintf(why, len, "%s", kid->why);
	remote_resume(&r);
	remote_free(&r);
	if (!err && kid->enabled)
		return kid;
	inject_free(kid);
	free(kid);
	return NULL;
}

int procstub_attach(struct session *s, pid_t pid, uint32_t slot)
{
	const char *off = no_model(s);
	char why[256] = "";
	struct inject *kid = NULL;

	/* Its time counts as the adoption's (procset.c, -v), not as the target's fast path phase. */
	if (!off && (kid = install(s, pid, slot, why, sizeof(why)))) {
		s->kin[slot] = kid;
		ht_info("PID %d: the fast path: a stub of its own at 0x%" PRIx64 ", %d functions redirected", pid,
			kid->base, kid->n);
		return 0;
	}
	/* Without a stub of ours, an earlier heaptrace's jumps go before uprobes do (a uprobe on one breaks it). */
	if (inject_reclaim_running(pid, &s->plan, session_traced_by_us, s) < 0 ||
	    probes_attach_stubbed(&s->plan, &s->tr, pid))
		return -1;
	s->stub_uprobes[slot] = true;
	if (off && !*off) {
		ht_info("PID %d: uprobes (the fast path is off)", pid);
	} else {
		char *name = proc_program_name(pid);
		ht_err("PID %d (%s) is traced with uprobes, not the fast path: %s", pid, name ? name : "?",
		       off ? off : why);
		free(name);
	}
	return 0;
}

pid_t procstub_shares(const struct session *s, pid_t pid)
{
	for (uint32_t k = 0; k < HT_MAX_PROCS; k++)
		if (s->kin[k] && s->kin[k]->base && s->kin[k]->pid != pid && inject_shares_memory(s->kin[k]->pid, pid))
			return s->kin[k]->pid;
	return 0;
}

_Static_assert(HT_LOADER_SIGNAL == SIGURG, "bpf/heaptrace.h's HT_LOADER_SIGNAL is SIGURG");

/*
 * Does HT_LOADER_SIGNAL reach pid now (/proc/PID/status's SigBlk)?  A mask
 * kept across the exec that blocks it would hold it back past the loader.
 */
bool procstub_signal_reaches(pid_t pid)
{
	unsigned long long blocked;

	return proc_status_num(pid, "SigBlk:", 16, &blocked) && !(blocked >> (HT_LOADER_SIGNAL - 1) & 1);
}

int procstub_arm(struct session *s, pid_t pid, uint32_t slot)
{
	struct tracer_hook *h = &s->arm_hooks[slot];
	struct inject *kid;
	char loader[4300];
	uint64_t off;
	int err;

	const char *why = no_model(s);
	tracer_unhook(h);
	if (!why && !procstub_signal_reaches(pid))
		why = "it blocks SIGURG, which would arm its stub";
	if (!why && !(kid = model(s, pid, slot)))
		why = "out of memory";
	if (why) {
		if (*why)
			ht_info("PID %d: uprobes, not the fast path: %s", pid, why);
		return -1;
	}
	/* A static program (no loader to wait for) keeps uprobes: its allocator is not the target's. */
	if (inject_arm_hook(kid, loader, sizeof(loader), &off))
		why = "a static program, or a loader without _dl_debug_state and _r_debug";
	else if ((err = tracer_hook_loader(&s->tr, loader, off, pid, h)))
		why = strerror(-err);
	if (why) {
		ht_info("PID %d: uprobes, not the fast path: %s", pid, why);
		free(kid);
		return -1;
	}
	/*
	 * The stub of its earlier program (inject_free()d at the exec): its
	 * losses stay counted, and its struct stays where it is, made over:
	 * --http's thread may be reading it (session_stub_counters).
	 */
	struct inject *old = s->kin[slot];
	if (old) {
		inject_carry(kid, old);
		*old = *kid;
		free(kid);
	} else {
		s->kin[slot] = kid;
	}
	return 0;
}

/*
 * An exec'd child's stub once its loader is done: in, or (its program does
 * not map the target's allocator, or the install failed) uprobes on the
 * stub's functions, as before the exec.
 */
static void settle(struct session *s, struct inject *kid, uint32_t slot)
{
	pid_t pid = kid->pid;

	tracer_unhook(&s->arm_hooks[slot]);
	kid->hooked = false;
	if (kid->enabled) {
		ht_info("PID %d: the fast path: a stub of its own at 0x%" PRIx64 ", %d functions redirected", pid,
			kid->base, kid->n);
		return;
	}
	ht_info("PID %d: uprobes, not the fast path: %s", pid,
		kid->why[0] ? kid->why : "its program does not map the target's allocator");
	/* Kept, disabled: the counters it carries stay counted, and --http's thread may read it. */
	inject_free(kid);
	kid->base = 0;
	if (!probes_attach_stubbed(&s->plan, &s->tr, pid))
		s->stub_uprobes[slot] = true;
}

/*
 * Was sig sent by the kernel (loader_state's bpf_send_signal_thread:
 * SI_KERNEL), not by a process (kill, tgkill: SI_USER, SI_TKILL)?  A
 * program's own SIGURG is delivered, never taken for ours.
 */
bool procstub_from_kernel(pid_t tid)
{
	siginfo_t si;

	return !ptrace(PTRACE_GETSIGINFO, tid, 0, &si) && si.si_code == SI_KERNEL;
}

bool procstub_on_signal(struct session *s, pid_t tid, int sig)
{
	if (sig != HT_LOADER_SIGNAL || s->stopped)
		return false;
	/* The loader runs in the process's only thread. */
	for (uint32_t k = 1; k < HT_MAX_PROCS; k++) {
		struct inject *kid = s->kin[k];
		if (!kid || !kid->armed || !kid->hooked || kid->pid != tid)
			continue;
		if (!procstub_from_kernel(tid))
			return false;
		bool ours = inject_on_loader(kid, tid, &s->plan, &s->tr) == 1;
		if (ours && !kid->armed)
			settle(s, kid, k);
		return ours;
	}
	return false;
}

void procstub_disarm(struct session *s, uint32_t slot)
{
	tracer_unhook(&s->arm_hooks[slot]);
	if (s->kin[slot] && s->kin[slot]->hooked)
		s->kin[slot]->armed = s->kin[slot]->hooked = false;
}
