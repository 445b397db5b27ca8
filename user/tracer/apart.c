/*
 * Programs verified side by side: each part is loaded into an instance of
 * its own of an object (the main one, or the uprobe programs' object,
 * uprobe_obj.c), with the main instance's maps (load_into), one part in
 * the calling thread and each other in a thread of its own, where the
 * process may run on two CPUs.  The verifier's largest programs by far
 * are the stub's record sites (stub_alloc about twice stub_free) and, in
 * the uprobe programs' object, alloc_return.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "tracer/state.h"  /* before the skeleton: it names our shared structs */
#include "heaptrace.skel.h"
#include "tracer/internal.h"
#include "util/time.h"

struct apart {
	struct tracer *tr;
	struct heaptrace *skel;
	const struct tracer_part *part;
	struct tracer_times times;
	int err;
	bool threaded;
	pthread_t thread;
};

static void *load_one(void *arg)
{
	struct apart *a = arg;

	a->err = tracer_load_into(a->tr, a->skel->obj, a->skel->skeleton, a->part->names[0], a->part->names + 1,
				  &a->times);
	return NULL;
}

bool tracer_two_cpus(void)
{
	cpu_set_t set;

	return !sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 1;
}

bool tracer_apart_worth(unsigned progs)
{
	unsigned both = 1u << PROG_STUB_ALLOC | 1u << PROG_STUB_FREE;

	return (progs & both) == both && tracer_two_cpus();
}

int tracer_load_parts(struct tracer *tr, const struct tracer_part *parts, int n)
{
	struct apart a[TRACER_MAX_PARTS];
	int err = 0;

	if (n > TRACER_MAX_PARTS || tr->n_more + n > (int)(sizeof(tr->more) / sizeof(*tr->more)))
		return -ENOSPC;
	memset(a, 0, sizeof(a));
	for (int k = 0; k < n; k++) {
		LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = tr->ktypes[0] ? tr->ktypes : NULL);
		a[k] = (struct apart){ .tr = tr, .part = &parts[k],
				       .skel = parts[k].inlined ? tracer_open_uprobes(&opts) : heaptrace__open_opts(&opts) };
		if (!a[k].skel) {
			err = -errno;
			while (k--)
				heaptrace__destroy(a[k].skel);
			return err;
		}
	}
	/* The first parts in threads, the last in this one: the largest last, this thread's wait is then the shortest. */
	for (int k = 0; k < n; k++) {
		if (k + 1 < n && !pthread_create(&a[k].thread, NULL, load_one, &a[k]))
			a[k].threaded = true;
		else
			load_one(&a[k]);
	}
	/* The phases are wall time: this thread's loads, then its wait for the threads' verifier. */
	double t0 = now_ms();
	for (int k = 0; k < n; k++) {
		if (a[k].threaded) {
			pthread_join(a[k].thread, NULL);
		} else {
			tr->times.btf_ms += a[k].times.btf_ms;
			tr->times.maps_ms += a[k].times.maps_ms;
			tr->times.core_ms += a[k].times.core_ms;
			tr->times.verify_ms += a[k].times.verify_ms;
		}
	}
	tr->times.verify_ms += now_ms() - t0;
	for (int k = 0; k < n; k++)
		err = err ? err : a[k].err;
	/* All or none: the caller loads them otherwise. */
	for (int k = 0; k < n; k++) {
		if (err)
			heaptrace__destroy(a[k].skel);
		else
			tr->more[tr->n_more++] = a[k].skel;
	}
	return err;
}

int tracer_load_apart(struct tracer *tr)
{
	struct tracer_part parts[2] = { { .names = { "stub_free" } }, { .names = { "stub_alloc" } } };

	return tracer_load_parts(tr, parts, 2);
}
