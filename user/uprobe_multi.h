/*
 * uprobe_multi links (kernel 6.6+) through the raw bpf(2) call: Debian 12's
 * libbpf 1.1 and uapi headers predate them.  One link attaches one program
 * at many offsets of one file, registers them together and, at close, waits
 * for one RCU grace period instead of one per probe.
 */
#ifndef HT_UPROBE_MULTI_H
#define HT_UPROBE_MULTI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define HT_BPF_TRACE_UPROBE_MULTI 48   /* enum bpf_attach_type */

/*
 * The program must have been loaded with expected_attach_type
 * HT_BPF_TRACE_UPROBE_MULTI.  cookies may be NULL.  pid limits the probes to
 * one process (0: all).  Returns a link fd, or -errno.
 */
int uprobe_multi_attach(int prog_fd, const char *path, const uint64_t *offsets,
			const uint64_t *cookies, uint32_t n, bool retprobe, pid_t pid);

#endif
