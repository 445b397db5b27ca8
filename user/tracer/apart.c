/*
 * The stub's two record-site programs are the verifier's largest by far
 * (stub_alloc about twice stub_free; the others together a few ms): each
 * is loaded in an instance of its own of the object, with the main
 * instance's maps (load_into), and the two are verified side by side,
 * one in a thread, where the process may run on two CPUs.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "tracer/tracer.h"  /* before the skeleton: it names our shared structs */
#include "heaptrace.skel.h"
#include "tracer/internal.h"
#include "util/time.h"

struct apart {
	struct tracer *tr;
	struct heaptrace *skel;
	const char *name;
	struct tracer_times times;
	int err;
	bool threaded;
	pthread_t thread;
};

static void *load_one(void *arg)
{
	struct apart *a = arg;

	a->err = tracer_load_into(a->tr, a->skel->obj, a->skel->skeleton, a->name, NULL, &a->times);
	return NULL;
}

bool tracer_apart_worth(unsigned progs)
{
	unsigned both = 1u << PROG_STUB_ALLOC | 1u << PROG_STUB_FREE;
	cpu_set_t set;

	return (progs & both) == both && !sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 1;
}

int tracer_load_apart(struct tracer *tr, unsigned progs)
{
	/* The smaller in the thread: the main thread's wait for it is then the shortest. */
	static const enum tracer_prog order[] = { PROG_STUB_FREE, PROG_STUB_ALLOC };
	struct apart a[2];
	int n = 0, err = 0;

	memset(a, 0, sizeof(a));
	for (int k = 0; k < 2 && tr->n_more + n < (int)(sizeof(tr->more) / sizeof(*tr->more)); k++) {
		if (!(progs & 1u << order[k]))
			continue;
		LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = tr->ktypes[0] ? tr->ktypes : NULL);
		a[n] = (struct apart){ .tr = tr, .skel = heaptrace__open_opts(&opts) };
		if (!a[n].skel) {
			err = -errno;
			while (n--)
				heaptrace__destroy(a[n].skel);
			return err;
		}
		a[n].name = bpf_program__name(tracer_main_prog(a[n].skel, order[k]));
		n++;
	}
	for (int k = 0; k < n; k++) {
		if (k + 1 < n && !pthread_create(&a[k].thread, NULL, load_one, &a[k]))
			a[k].threaded = true;
		else
			load_one(&a[k]);
	}
	/* The phases are wall time: the main thread's loads, then its wait for the thread's verifier. */
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
	/* Both or neither: the caller loads them in the main object instead. */
	for (int k = 0; k < n; k++) {
		if (err)
			heaptrace__destroy(a[k].skel);
		else
			tr->more[tr->n_more++] = a[k].skel;
	}
	return err;
}
