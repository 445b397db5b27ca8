/*
 * bench/lookup: the cost of a per-CPU scratch lookup against a stack
 * pointer, a step of a loop (bench/lookup.bpf.c), in ns.  Prints
 * "percpu NS stack NS" per step: the medians of RUNS test runs of REPEAT.
 */
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include <stdio.h>
#include <stdlib.h>

#include "lookup.skel.h"

#define STEPS 1024      /* bench/lookup.bpf.c's */
#define RUNS 9
#define REPEAT 2000

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median ns a step of prog over RUNS test runs; < 0 when it cannot run. */
static double per_step(struct bpf_program *prog)
{
	char pkt[64] = { 0 };
	double t[RUNS];

	for (int i = 0; i < RUNS; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt), .repeat = REPEAT);
		if (bpf_prog_test_run_opts(bpf_program__fd(prog), &o))
			return -1;
		t[i] = (double)o.duration / STEPS;
	}
	qsort(t, RUNS, sizeof(*t), cmp);
	return t[RUNS / 2];
}

int main(void)
{
	struct lookup *skel = lookup__open_and_load();

	if (!skel) {
		fprintf(stderr, "lookup: cannot load bench/lookup.bpf.o\n");
		return 1;
	}
	double p = per_step(skel->progs.percpu_area), s = per_step(skel->progs.stack_area);
	lookup__destroy(skel);
	if (p < 0 || s < 0) {
		fprintf(stderr, "lookup: BPF_PROG_TEST_RUN failed\n");
		return 1;
	}
	printf("percpu %.2f stack %.2f\n", p, s);
	return 0;
}
