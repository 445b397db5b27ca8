/*
 * The programs, each loaded where it verifies fastest and only once it is
 * needed: the uprobe programs together from their own object (alloc_return
 * beside the others on two CPUs), the session program from its object,
 * another program into an instance of the main object of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "tracer/state.h"  /* before the skeletons: they name our shared structs */
#include "heaptrace.skel.h"
#include "alloc_session.skel.h"
#include "tracer/internal.h"
#include "tracer/programs.h"
#include "util/log.h"
#include "util/time.h"

/* A program of the main object (alloc_session is session.bpf.c's). */
struct bpf_program *tracer_main_prog(const struct heaptrace *skel, enum tracer_prog prog)
{
	return prog == PROG_ALLOC_ENTER ? skel->progs.alloc_enter :
	       prog == PROG_ALLOC_RETURN ? skel->progs.alloc_return :
	       prog == PROG_FREE_ENTER ? skel->progs.free_enter :
	       prog == PROG_RESET_ENTER ? skel->progs.reset_enter :
	       prog == PROG_STUB_ALLOC ? skel->progs.stub_alloc :
	       prog == PROG_STUB_FREE ? skel->progs.stub_free : NULL;
}

bool tracer_sessions(struct tracer *tr)
{
	if (!tr->session || tr->sess)
		return tr->session;
	double t0 = now_ms();
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = tr->ktypes[0] ? tr->ktypes : NULL);
	struct alloc_session *s = alloc_session__open_opts(&opts);
	int err = s ? tracer_load_into(tr, s->obj, s->skeleton, "alloc_session", NULL, &tr->times) : -errno;
	if (err) {
		/* A kernel before 6.13 (no bpf_session_is_return, no session attach type). */
		ht_info("cannot load the uprobe session program (%s): plain return probes", strerror(-err));
		alloc_session__destroy(s);
		tr->session = false;
		return false;
	}
	tr->sess = s;
	ht_info("loaded the uprobe session program in %.1f ms", now_ms() - t0);
	return true;
}

/* prog as loaded, in the main instance or another; NULL: in none yet. */
static struct bpf_program *loaded(const struct tracer *tr, enum tracer_prog prog)
{
	for (int i = -1; i < tr->n_more; i++) {
		struct bpf_program *p = tracer_main_prog(i < 0 ? tr->skel : tr->more[i], prog);
		if (p && bpf_program__fd(p) >= 0)
			return p;
	}
	return NULL;
}

/*
 * The uprobe programs of want (1 << PROG_*) that no instance has, together:
 * into instances of the uprobe programs' object (uprobe_obj.c), with the
 * main object's maps, alloc_return (by far the largest) beside the others
 * where two CPUs may run (apart.c); of the main object if that one cannot
 * be loaded.  0, or -errno (said).
 */
int tracer_load_uprobes(struct tracer *tr, unsigned want)
{
	const char *left[5] = { NULL };
	char list[128] = "";
	int n = 0, err = 0;

	for (int k = PROG_ALLOC_ENTER; k <= PROG_RESET_ENTER; k++)
		if ((want & 1u << k) && !loaded(tr, k)) {
			left[n] = bpf_program__name(tracer_main_prog(tr->skel, k));
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", n ? ", " : "", left[n]);
			n++;
		}
	if (!n)
		return 0;
	double t0 = now_ms();
	for (int inlined = 1; inlined >= 0; inlined--) {
		struct tracer_part parts[2] = { { .inlined = inlined }, { .inlined = inlined } };
		bool apart = inlined && n > 1 && tracer_two_cpus();
		int np = 1, m = 0;
		/* With another program beside it, parts[0] is never empty. */
		for (int k = 0; k < n; k++) {
			if (apart && !strcmp(left[k], "alloc_return")) {
				parts[1].names[0] = left[k];
				np = 2;
			} else {
				parts[0].names[m++] = left[k];
			}
		}
		if (!(err = tracer_load_parts(tr, parts, np))) {
			ht_info("loaded %s in %.1f ms (%s)", list, now_ms() - t0,
				inlined ? "the uprobe programs' object" : "an instance of the main object");
			return 0;
		}
		if (inlined)
			ht_info("cannot load the uprobe programs' object (%s): the main object's programs", strerror(-err));
	}
	ht_err("cannot load the BPF program %s: %s", left[0], strerror(-err));
	return err;
}

/*
 * A program, loaded if not yet: an uprobe program with the other uprobe
 * programs not loaded yet (a fallback to uprobes wants them together),
 * another into an instance of the main object of its own.  NULL if it
 * cannot be loaded (said).
 */
struct bpf_program *tracer_program(struct tracer *tr, enum tracer_prog prog)
{
	if (prog == PROG_ALLOC_SESSION)
		return tracer_sessions(tr) ? tr->sess->progs.alloc_session : NULL;
	struct bpf_program *p = loaded(tr, prog);
	if (p)
		return p;
	if (TRACER_UPROBE_PROGS & 1u << prog) {
		if (tracer_load_uprobes(tr, TRACER_UPROBE_PROGS))
			return NULL;
	} else {
		const char *name = bpf_program__name(tracer_main_prog(tr->skel, prog));
		struct tracer_part part = { .names = { name } };
		double t0 = now_ms();
		int err = tracer_load_parts(tr, &part, 1);
		if (err) {
			ht_err("cannot load the BPF program %s: %s", name, strerror(-err));
			return NULL;
		}
		ht_info("loaded %s in %.1f ms (an instance of the main object)", name, now_ms() - t0);
	}
	return loaded(tr, prog);
}
