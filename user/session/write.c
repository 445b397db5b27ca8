/*
 * After the stop: the final profile (or the last snapshot), the at-peak
 * one, the children's, and what -v reports of the run (counters, memory,
 * where the time went).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "output/output.h"
#include "session/state.h"
#include "symbolize/pyframes.h"
#include "symbolize/symbolize.h"
#include "util/log.h"

/* -v: where the time went, one line. */
static void report_phases(const struct session *s)
{
	const struct tracer *tr = &s->tr;

	ht_info("phases: plan %.1f ms, unwind tables %.1f, BPF load %.1f (kernel types %.1f, kernel BTF %.1f, maps %.1f, "
		"CO-RE %.1f, verifier %.1f), attach %.1f, fast path %.1f, traced run %.1f, detach %.1f, read %.1f, "
		"symbolize %.1f, write %.1f; %.1f ms in all", s->ph.plan, s->ph.tables, s->ph.load, tr->times.ktypes_ms,
		tr->times.btf_ms, tr->times.maps_ms, tr->times.core_ms, tr->times.verify_ms, s->ph.attach, s->ph.inject, s->ph.run,
		s->ph.detach, s->ph.read, s->ph.symbolize, s->ph.write, now_ms() - s->ph.start);
}

/*
 * -v with several processes: what the set costs, in all and a process (the
 * maps are sized for HT_MAX_PROCS from the start: they do not grow with it).
 */
static void report_scale(const struct session *s, const struct tracer_memory *m)
{
	unsigned n = s->next_slot ? s->next_slot : 1, stubs = s->in.base != 0;

	if (!s->o->several)
		return;
	/* A slot's stub stays listed after its process ended (its counters' last reading). */
	for (unsigned k = 1; k < HT_MAX_PROCS; k++)
		stubs += s->kin[k] != NULL;
	ht_info("processes: %u traced (%u adopted running, %u followed from a fork), %u with a stub of their own; "
		"adopting took %.1f ms, %.2f ms a process", n, s->adopted.n, n - 1 - s->adopted.n, stubs, s->adopted.ms,
		s->adopted.n ? s->adopted.ms / s->adopted.n : 0.0);
	/* A stub's file is a memfd of its process: its pages (shmem) are charged there, not to the maps. */
	ht_info("kernel memory for %u processes: %.1f MiB in maps, %.1f KiB in %d programs, %d links after the "
		"adoption; %.1f KiB a process (the maps are sized for %d processes from the start); and %u stub "
		"files of %d KiB (shmem of their processes)", n, m->memlock / 1048576.0, m->progs_memlock / 1024.0,
		m->progs, s->adopted.links, (m->memlock + m->progs_memlock) / 1024.0 / n, HT_MAX_PROCS, stubs,
		STUB_FILE_SIZE / 1024);
	ht_info("heaptrace RSS: %" PRIu64 " KiB before adopting %u processes, %" PRIu64 " after (%.1f KiB a process)",
		s->adopted.rss_before, s->adopted.n, s->adopted.rss_after,
		s->adopted.n ? ((double)s->adopted.rss_after - (double)s->adopted.rss_before) / s->adopted.n : 0.0);
}

static void report_resources(const struct session *s, const struct tracer *tr, uint32_t max_live)
{
	struct tracer_memory m;
	struct rusage ru;

	tracer_memory(tr, &m);
	report_scale(s, &m);
	if (m.estimated)
		ht_info("kernel memory: %.1f MiB in BPF maps (fdinfo memlock %.1f MiB: elements at their size, "
			"not their slab object's), %.1f MiB with every map full", m.now / 1048576.0,
			m.memlock / 1048576.0, m.max / 1048576.0);
	else
		ht_info("kernel memory: %.1f MiB in BPF maps (fdinfo memlock: this kernel counts maps at their "
			"capacity)", m.memlock / 1048576.0);
	ht_info("live blocks: %" PRIu64 " in %d of %d levels with room for %u (--max-allocs %u): %.1f MiB, "
		"%.0f bytes a block (%u an element)", m.live_blocks, m.levels, HT_LIVE_LEVELS, m.live_room,
		max_live, m.live_now / 1048576.0, m.live_blocks ? (double)m.live_now / m.live_blocks : 0.0,
		m.block_bytes);
	if (!getrusage(RUSAGE_SELF, &ru))
		ht_info("heaptrace peak RSS: %ld KiB", ru.ru_maxrss);
}

/* The whole session's counters (each profile carries its own process's). */
static void report_counters(const struct profile_source *src)
{
	uint64_t counters[HT_COUNTER_MAX];
	char buf[1024];

	profile_session_counters(src, counters);
	output_losses(buf, sizeof(buf), counters, false);
	if (!*buf && !ht_verbose)
		return;
	output_losses(buf, sizeof(buf), counters, true);
	ht_err("events: %s", buf);
}

/* --at-peak: the profile as it stood at the peak, beside the final one. */
static int write_at_peak(struct session *s, struct profile *prof, const char *prefix)
{
	const struct trace_opts *o = s->o;
	char path[4200];

	snapshot_peak_path(o->output, prefix, s->t.pid, o->format, path, sizeof(path));
	profile_at_peak(prof);
	if (output_file(path, o->format, prof, o->value, o->top)) {
		ht_err("cannot write the at-peak profile %s: %s", path, strerror(errno));
		return 1;
	}
	ht_err("at-peak profile: %s (peak %" PRIu64 " bytes in use, %.3f s after the start)", path,
	       (uint64_t)prof->totals.peak_bytes,
	       prof->totals.peak_ns > s->src.start_ns ? (prof->totals.peak_ns - s->src.start_ns) / 1e9 : 0);
	return 0;
}

/*
 * Without --follow-fork a pre-fork server's workers, where its heap is,
 * run untraced: a profile of the parent alone looks complete.  Said once,
 * at the end, with the number the BPF side counted (process_fork).
 */
static void hint_untraced(const struct tracer *tr)
{
	uint64_t c[HT_COUNTER_MAX];

	tracer_counters(tr, 0, c);
	if (c[HT_UNTRACED_CHILDREN])
		ht_err("%" PRIu64 " %s forked and not traced: --follow-fork traces them", c[HT_UNTRACED_CHILDREN],
		       c[HT_UNTRACED_CHILDREN] == 1 ? "child" : "children");
}

/* After the stop: the final profile (or last snapshot), at-peak, children.  heaptrace's status. */
int session_write_profiles(struct session *s, struct snapshots *ss)
{
	const struct trace_opts *o = s->o;
	struct target *t = &s->t;
	struct profile prof;
	double t1 = now_ms();
	int rc;

	if (o->several)
		tracee_refresh_maps(&s->tc);
	if (profile_take_main(&s->src, t->pid, t->maps, &prof)) {
		snapshots_free(ss);
		return 1;
	}
	prof.name = t->name;
	prof.ended = t->exited;
	/*
	 * Killed by SIGKILL: a launched command's status says so; a -p
	 * target's only when the ptrace reap saw its end before its pidfd
	 * did (else its status is unknown, 0, and its end must do).
	 */
	bool sigkill = WIFSIGNALED(t->status) && WTERMSIG(t->status) == SIGKILL;
	oom_say(&s->oom, &prof, t->pid, true, !s->tr.oom_link, t->exited && (sigkill || (!t->launched && !t->status)));
	s->ph.read = now_ms() - t1;
	ht_info("read %zu stacks from the maps in %.1f ms", prof.n, s->ph.read);
	/*
	 * One symbolizer for the suppressions and the output: each frame is
	 * symbolized once (twice cost pyframes' 3.12 run 5 s more, DWARF
	 * scopes of libpython's big units).  An --interval run writes the
	 * last snapshot's profile instead: not this one's maps.
	 */
	struct symbolizer *sym = o->suppress && !o->interval ? sym_open(prof.maps ? prof.maps : "") : NULL;
	suppress_apply(o->suppress, &prof, sym);
	if (limits_check(&o->limits, &prof))
		s->over_limit = true;
	report_counters(&s->src);
	/*
	 * A launched command's own first execve is ours, not news, and so are
	 * the execs followed (a script's interpreter, a wrapper): -v said them.
	 */
	unsigned own = t->launched ? 1u : 0u;
	struct ht_totals tt;    /* the target's own (a --merge profile's are the tree's) */
	tracer_totals(&s->tr, 0, &tt);
	if (tt.execs > own && s->target_execs > own)
		ht_info("PID %d executed %" PRIu64 " programs; the profile is the last one's (%" PRIu64
			" live blocks of the others dropped)", t->pid, (uint64_t)tt.execs, (uint64_t)tt.exec_dropped);
	else if (tt.execs > own)
		ht_err("PID %d executed a new program: %" PRIu64 " live blocks of the old one were dropped; "
		       "tracing went on in the new one", t->pid, (uint64_t)tt.exec_dropped);
	t1 = now_ms();
	if (o->interval) {
		if (snapshot_write(ss, &prof) || ss->failed)
			ht_err("%d of %d snapshots lost", ss->failed, ss->seq);
		rc = ss->failed ? 1 : 0;
		/* snapshot_write kept the profile as the previous one */
		prof = ss->prev;
		if (!prof.own_maps)
			prof.maps = t->maps;
		prof.name = t->name;
		prof.ended = t->exited;
		ss->have_prev = false;
	} else if (o->output) {
		rc = output_file_sym(o->output, o->format, &prof, o->value, o->top, sym) ? 1 : 0;
		if (rc && errno != ECANCELED)   /* ECANCELED: a FIFO's wait given up, and said */
			ht_err("cannot write the profile to %s: %s", o->output, strerror(errno));
	} else {
		rc = output_write_sym(stdout, o->format, &prof, o->value, o->top, sym) ? 1 : 0;
		if (rc)
			ht_err("cannot write the profile: %s", strerror(errno));
	}
	if (sym)
		sym_close(sym);
	if (!o->interval && ss->failed) {      /* SIGUSR1's, --interval-bytes' */
		ht_err("%d of %d snapshots lost", ss->failed, ss->seq);
		rc = 1;
	}
	s->ph.symbolize = output_symbolize_ms;
	s->ph.write = now_ms() - t1 - s->ph.symbolize;
	ht_info("wrote the profile in %.1f ms", now_ms() - t1);
	if (pyf_active()) {
		uint64_t named, lost;
		pyf_counts(&named, &lost);
		/* A loss, said: frames of code that died before the drain read it (an imported module's body, a class's). */
		if (lost)
			ht_err("Python frames: %" PRIu64 " code objects were gone before heaptrace could read them (their frames "
			       "read '<python code 0x...>'); %" PRIu64 " named", lost, named);
		else
			ht_info("Python frames: %" PRIu64 " code objects named", named);
	}
	if (o->at_peak && write_at_peak(s, &prof, o->interval ? ss->prefix : NULL))
		rc = 1;
	if (o->several && !o->merge && session_write_children(s))
		rc = 1;
	else if (!o->several)
		hint_untraced(&s->tr);
	else if (s->tc.not_followed)
		ht_err("--follow-fork: %zu child processes were not traced", s->tc.not_followed);
	snapshots_free(ss);
	report_resources(s, &s->tr, o->max_live);
	report_phases(s);
	if (prof.trimmed)
		ht_info("%zu stacks ended where frame-pointer unwinding left executable memory", prof.trimmed);
	profile_free(&prof);
	return rc;
}
