#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>

#include "tracer/uprobe_multi.h"

#define HT_BPF_F_UPROBE_MULTI_RETURN 1

/* BPF_LINK_CREATE's uprobe_multi member, laid out as in the 6.6+ uapi. */
struct link_create_uprobe_multi {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};

static int link_create(int prog_fd, uint32_t attach_type, const char *path, const uint64_t *offsets,
		       const uint64_t *cookies, uint32_t n, uint32_t flags, pid_t pid)
{
	struct link_create_uprobe_multi lc;
	int fd;

	memset(&lc, 0, sizeof(lc));
	lc.prog_fd = prog_fd;
	lc.attach_type = attach_type;
	lc.path = (uintptr_t)path;
	lc.offsets = (uintptr_t)offsets;
	lc.cookies = (uintptr_t)cookies;
	lc.cnt = n;
	lc.multi_flags = flags;
	lc.pid = pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &lc, sizeof(lc));
	return fd < 0 ? -errno : fd;
}

int uprobe_multi_attach(int prog_fd, const char *path, const uint64_t *offsets,
			const uint64_t *cookies, uint32_t n, bool retprobe, pid_t pid)
{
	return link_create(prog_fd, HT_BPF_TRACE_UPROBE_MULTI, path, offsets, cookies, n,
			   retprobe ? HT_BPF_F_UPROBE_MULTI_RETURN : 0, pid);
}

/* The same attr: a session is a uprobe_multi link of another attach type. */
int uprobe_session_attach(int prog_fd, const char *path, const uint64_t *offsets,
			  const uint64_t *cookies, uint32_t n, pid_t pid)
{
	return link_create(prog_fd, HT_BPF_TRACE_UPROBE_SESSION, path, offsets, cookies, n, 0, pid);
}
