/*
 * --mmap: the syscalls tracepoints of the mapping calls, for
 * bpf/maps.bpf.h.  Tracepoints of single syscalls, not raw_syscalls:
 * every other system call of every process runs no program.
 */
#include <errno.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "tracer/state.h"  /* before the skeleton: it names our shared structs */
#include "heaptrace.skel.h"
#include "util/log.h"
#include "tracer/internal.h"
#include "tracer/maps.h"

int tracer_attach_maps(struct tracer *tr)
{
	static const char *const exits[] = { "sys_exit_mmap", "sys_exit_munmap", "sys_exit_mremap", "sys_exit_brk" };
	int n = 0;

	tr->map_links[n] = bpf_program__attach_tracepoint(tr->skel->progs.map_enter, "syscalls", "sys_enter_brk");
	if (!tr->map_links[n++])
		goto fail;
	for (size_t i = 0; i < sizeof(exits) / sizeof(*exits); i++) {
		tr->map_links[n] = bpf_program__attach_tracepoint(tr->skel->progs.map_exit, "syscalls", exits[i]);
		if (!tr->map_links[n++])
			goto fail;
	}
	return 0;
fail:
	ht_err("--mmap: cannot attach to the syscalls tracepoints (%s): the kernel needs CONFIG_FTRACE_SYSCALLS",
	       strerror(errno));
	return -1;
}

void tracer_detach_maps(struct tracer *tr)
{
	for (size_t i = 0; i < sizeof(tr->map_links) / sizeof(*tr->map_links); i++) {
		bpf_link__destroy(tr->map_links[i]);
		tr->map_links[i] = NULL;
	}
}

void tracer_remote(struct tracer *tr, pid_t pid, bool on)
{
	if (tr->skel)
		tr->skel->data_maps->remote_tgid = on ? (uint32_t)pid : 0;
}
