/* The uprobes' links (links.c): made per probe or per program and process, closed at the stop. */
#ifndef HT_TRACER_LINKS_H
#define HT_TRACER_LINKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer/state.h"

struct bpf_link;

/* Attach a program at a file offset of an object, for one process, with a cookie. */
int tracer_attach(struct tracer *tr, enum tracer_prog prog, const char *path, uint64_t offset,
		  uint32_t cookie, pid_t pid);

/*
 * Attach one program at many offsets of an object with one uprobe_multi
 * link: one registration, and one RCU grace period at detach instead of one
 * per probe (seconds for a dozen probes).  Needs tracer_config.multi.
 * PROG_ALLOC_SESSION makes a uprobe session link.  Returns 0 or -errno;
 * -EOPNOTSUPP when the kernel has no uprobe_multi, -EPROTONOSUPPORT when it
 * has no uprobe sessions.
 */
int tracer_attach_multi(struct tracer *tr, enum tracer_prog prog, const char *path,
			const uint64_t *offsets, const uint64_t *cookies, uint32_t n, pid_t pid);

/*
 * A followed process ended: close its uprobe_multi links.  Every link on
 * a probe is consulted at each hit, and one whose process is not the
 * caller's asks for the return (uprobe sessions cannot skip it): a dead
 * process's links would cost every other process a return probe per call.
 * Its entries of the process and stub maps go too.
 */
void tracer_forget_pid(struct tracer *tr, pid_t pid);

/*
 * bpf/heaptrace.bpf.c's loader_state at a file offset of pid's dynamic
 * loader (its _dl_debug_state): one link of its own, which the caller
 * closes with tracer_unhook() once the process has its stub.  0 or -errno
 * (-ENOENT: the program is not loaded, no --follow-fork with a stub).
 */
struct tracer_hook {
	bool on;                /* made (a zeroed one is none) */
	int fd;                 /* a uprobe_multi link, or -1 */
	struct bpf_link *link;  /* a single uprobe's, or NULL */
};
int tracer_hook_loader(struct tracer *tr, const char *path, uint64_t offset, pid_t pid, struct tracer_hook *h);
void tracer_unhook(struct tracer_hook *h);

/* Stop tracing: remove every uprobe, keep the maps readable. */
void tracer_detach(struct tracer *tr);

#endif
