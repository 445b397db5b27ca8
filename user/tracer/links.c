/*
 * The uprobes' links: one per probe, or one uprobe_multi (or uprobe
 * session) link per program, object and process; closed by process when
 * one ends, and all at once, by threads side by side, at the stop.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracer/state.h"  /* before the skeletons: they name our shared structs */
#include "heaptrace.skel.h"
#include "tracer/drain.h"
#include "tracer/internal.h"
#include "tracer/links.h"
#include "tracer/uprobe_multi.h"
#include "util/array.h"

int tracer_attach_multi(struct tracer *tr, enum tracer_prog prog, const char *path,
			const uint64_t *offsets, const uint64_t *cookies, uint32_t n, pid_t pid)
{
	struct bpf_program *p = tracer_program(tr, prog);
	if (!p)
		return prog == PROG_ALLOC_SESSION ? -EPROTONOSUPPORT : -ENOENT;
	int prog_fd = bpf_program__fd(p);
	int fd = prog == PROG_ALLOC_SESSION ? uprobe_session_attach(prog_fd, path, offsets, cookies, n, pid) :
		 uprobe_multi_attach(prog_fd, path, offsets, cookies, n, prog == PROG_ALLOC_RETURN, pid);

	/* The first link of a type tells whether the kernel knows the type at all. */
	if (fd == -EINVAL || fd == -EOPNOTSUPP) {
		if (prog == PROG_ALLOC_SESSION && !tr->n_session)
			return -EPROTONOSUPPORT;
		if (!tr->n_multi)
			return -EOPNOTSUPP;
	}
	if (fd < 0)
		return fd;
	tr->n_session += prog == PROG_ALLOC_SESSION;
	if (ARRAY_RESERVE(tr->multi_links, tr->multi_cap, (size_t)tr->n_multi + 1, 16)) {
		close(fd);
		return -ENOMEM;
	}
	tr->multi_links[tr->n_multi++] = (struct tracer_multi){ .fd = fd, .pid = pid };
	return 0;
}

void tracer_forget_pid(struct tracer *tr, pid_t pid)
{
	__u32 tgid = pid;

	drain_now(tr);

	for (int i = 0; i < tr->n_multi; i++)
		if (tr->multi_links[i].pid == pid && tr->multi_links[i].fd >= 0) {
			close(tr->multi_links[i].fd);
			tr->multi_links[i].fd = -1;
		}
	/* Its entries go too: a pid used again is another process (its slot's stacks and totals stay). */
	bpf_map_delete_elem(bpf_map__fd(tr->skel->maps.procs), &tgid);
	bpf_map_delete_elem(bpf_map__fd(tr->skel->maps.stub_procs), &tgid);
}

int tracer_attach(struct tracer *tr, enum tracer_prog prog, const char *path, uint64_t offset,
		  uint32_t cookie, pid_t pid)
{
	bool ret = prog == PROG_ALLOC_RETURN;
	/* A return probe of one process: its pid for alloc_return's own filter (bpf/heaptrace.bpf.c). */
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = (ret && pid > 0 ? (uint64_t)pid << 32 : 0) | cookie,
		    .retprobe = ret);
	struct bpf_program *p = tracer_program(tr, prog);
	if (!p)
		return -ENOENT;
	struct bpf_link *l = bpf_program__attach_uprobe_opts(p, pid, path, offset, &opts);

	if (!l)
		return -errno;
	if (ARRAY_RESERVE(tr->links, tr->links_cap, (size_t)tr->n_links + 1, 16)) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	tr->links[tr->n_links++] = l;
	return 0;
}

int tracer_hook_loader(struct tracer *tr, const char *path, uint64_t offset, pid_t pid, struct tracer_hook *h)
{
	struct bpf_program *p = tr->skel->progs.loader_state;
	uint64_t cookie = 0;

	*h = (struct tracer_hook){ .fd = -1 };
	if (bpf_program__fd(p) < 0)
		return -ENOENT;
	/* Where uprobe_multi links are the rule, the object's uprobe programs expect them (tracer_set_attach_types). */
	if (tr->multi) {
		int fd = uprobe_multi_attach(bpf_program__fd(p), path, &offset, &cookie, 1, false, pid);
		if (fd < 0)
			return fd;
		h->fd = fd;
		h->on = true;
		return 0;
	}
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	h->link = bpf_program__attach_uprobe_opts(p, pid, path, offset, &opts);
	h->on = h->link != NULL;
	return h->on ? 0 : -errno;
}

void tracer_unhook(struct tracer_hook *h)
{
	if (!h->on)
		return;
	if (h->fd >= 0)
		close(h->fd);
	bpf_link__destroy(h->link);
	*h = (struct tracer_hook){ .fd = -1 };
}

/* What one closing thread takes: every step-th link from its first. */
struct closer {
	struct tracer *tr;
	int first, step;
	pthread_t thread;
};

static void *close_links(void *arg)
{
	const struct closer *c = arg;
	struct tracer *tr = c->tr;

	for (int i = c->first; i < tr->n_multi + tr->n_links; i += c->step) {
		if (i < tr->n_multi) {
			if (tr->multi_links[i].fd >= 0)
				close(tr->multi_links[i].fd);
		} else {
			bpf_link__destroy(tr->links[i - tr->n_multi]);
		}
	}
	return NULL;
}

void tracer_detach(struct tracer *tr)
{
	enum { CLOSERS = 16 };
	struct closer c[CLOSERS];
	int n = tr->n_multi + tr->n_links, started = 0;

	/*
	 * The programs ignore every event from now on, so the links may close
	 * in any order, and at once: each close waits for a grace period of
	 * its own (uprobe unregistration, ~40 ms each), which threads closing
	 * side by side wait together.  Where a thread cannot start, this one
	 * closes its share.
	 */
	/* Events the rings hold happened before the stop. */
	drain_now(tr);
	if (tr->skel && tr->skel->bss)
		tr->skel->bss->tracing_stopped = 1;
	int step = n < CLOSERS ? n : CLOSERS;
	for (int k = 0; k < step; k++) {
		c[k] = (struct closer){ .tr = tr, .first = k, .step = step };
		if (k && !pthread_create(&c[k].thread, NULL, close_links, &c[k]))
			started |= 1 << k;
	}
	if (step)
		close_links(&c[0]);
	for (int k = 1; k < step; k++) {
		if (started & 1 << k)
			pthread_join(c[k].thread, NULL);
		else
			close_links(&c[k]);
	}
	free(tr->multi_links);
	tr->multi_links = NULL;
	tr->multi_cap = 0;
	tr->n_multi = 0;
	tr->n_session = 0;
	free(tr->links);
	tr->links = NULL;
	tr->links_cap = 0;
	tr->n_links = 0;
}
