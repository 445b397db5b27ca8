/*
 * uprobe_multi links (kernel 6.6+) and uprobe sessions (6.13+) through the
 * raw bpf(2) call: Debian 12's libbpf 1.1 and uapi headers predate them.
 * One link attaches one program at many offsets of one file, registers
 * them together and, at close, waits for one RCU grace period instead of
 * one per probe.
 */
#ifndef HT_UPROBE_MULTI_H
#define HT_UPROBE_MULTI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define HT_BPF_TRACE_UPROBE_MULTI 48   /* enum bpf_attach_type */
#define HT_BPF_TRACE_UPROBE_SESSION 57

/*
 * The program must have been loaded with expected_attach_type
 * HT_BPF_TRACE_UPROBE_MULTI.  cookies may be NULL.  pid limits the probes to
 * one process (0: all).  Returns a link fd, or -errno.
 */
int uprobe_multi_attach(int prog_fd, const char *path, const uint64_t *offsets,
			const uint64_t *cookies, uint32_t n, bool retprobe, pid_t pid);

/*
 * A uprobe session: the program runs at the entry and, unless that run
 * returned non-zero, at the return too (bpf_session_is_return() tells
 * which).  The program must have been loaded with expected_attach_type
 * HT_BPF_TRACE_UPROBE_SESSION.  Returns a link fd, or -errno: -EINVAL
 * where the kernel has no sessions.
 */
int uprobe_session_attach(int prog_fd, const char *path, const uint64_t *offsets,
			  const uint64_t *cookies, uint32_t n, pid_t pid);

#endif
