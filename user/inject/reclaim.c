/*
 * No uprobe ever goes on an earlier heaptrace's jump: the kernel would put
 * its int3 over the jump's first byte and, after the hit, resume inside the
 * jump's offset (the calloc+3 crash, docs/fast-path.md).  So before a
 * process gets uprobes on functions a killed session may have redirected
 * (a -p session without a stub of its own, a stub that failed, a followed
 * child whose parent has no stub of ours), the file's bytes go back.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "inject/reclaim.h"
#include "insn/relocate.h"
#include "probe/plan.h"
#include "util/elfobj.h"
#include "util/log.h"
#include "util/procfs.h"

/* Does at lie in a stub's mapping (or, jumps_too, a page of jumps: inject/jumps.h)? */
static bool in_stub(const char *maps, uint64_t at, bool jumps_too)
{
	struct map_entry e;

	for (const char *pos = maps; maps_next(&pos, &e);)
		if (at >= e.lo && at < e.hi)
			return strstr(e.path, "memfd:heaptrace-stub") || (jumps_too && strstr(e.path, "memfd:heaptrace-jumps"));
	return false;
}

/*
 * An earlier heaptrace's jump (it was killed before it could restore the
 * function, or the process was forked from one that still had it): the
 * jump leads into a stub mapping, or a page of jumps.
 */
static bool earlier_stub(const char *maps, uint64_t addr, const uint8_t *code)
{
	int32_t rel;

	if (code[0] != 0xe9)
		return false;
	memcpy(&rel, code + 1, 4);
	return in_stub(maps, addr + JMP_REL32_LEN + rel, true);
}

/*
 * What an earlier stub's patch covers: its jump, then the int3s it wrote
 * over the rest of what it displaced.  A displaced byte that is 0xcc in
 * the file too (an immediate, a displacement) does not end it: the scan
 * goes on over bytes that are the file's, to the last int3 of the patch.
 */
static size_t patch_len(const uint8_t *file, const uint8_t *code, size_t n)
{
	size_t len = JMP_REL32_LEN;

	for (size_t i = JMP_REL32_LEN; i < n && (code[i] == 0xcc || code[i] == file[i]); i++)
		if (code[i] != file[i])
			len = i + 1;
	return len;
}

/*
 * A CPython wrapper's table slot that an earlier session pointed into its
 * stub (inject/pytables.h) and did not put back (killed): the function
 * back in it when restore is set, so that the calls reach the function's
 * entry, where a uprobe or this session's jump is.  1: found, else 0.
 */
static int stale_slot(struct remote *r, const char *maps, const struct probe *p, uint64_t bias, bool restore,
		      int *failed)
{
	uint64_t slot = p->fwd_slot + bias, func = p->fwd_impl + bias, now;

	if (!p->forwards || !p->fwd_slot || !p->fwd_impl || remote_read(r, slot, &now, sizeof(now)) || now == func ||
	    !in_stub(maps, now, false))
		return 0;
	if (!restore)
		return 1;
	if (remote_write(r, slot, &func, sizeof(func))) {
		ht_err("PID %d: the allocator table slot of %s points into an earlier heaptrace's stub and cannot be "
		       "restored", r->pid, p->func);
		(*failed)++;
	} else {
		ht_info("fast path: PID %d: the allocator table slot of %s still pointed into an earlier heaptrace's "
			"stub: restored", r->pid, p->func);
	}
	return 1;
}

/*
 * Each function of the plan in pid that jumps into a heaptrace stub (the
 * malloc family, and --sym functions, which go through the stub too): its file's bytes back when restore is set (every thread
 * stopped, or the process held before its first instruction).  A uprobe
 * must never go on such a jump: the kernel writes its int3 over the
 * jump's first byte (or, past the entry, over its displacement) and, after
 * the hit, runs the file's instruction out of line and resumes after it,
 * inside the jump; unregistered, it writes the file's byte back into the
 * jump.  Either way the next call runs a mix of both (SIGSEGV at
 * calloc+3 in PostgreSQL's postmaster: a --no-inject heaptrace after one
 * SIGKILLed while stopping).  CPython's table slots that point into a
 * stub go back too (stale_slot).  Returns how many functions jump and
 * slots point there (restored or not), -1 when one could not be restored.
 */
static int stale_jumps(struct remote *r, const struct probe_plan *plan, bool restore)
{
	int found = 0, failed = 0;

	char *maps = proc_maps(r->pid);
	if (!maps)
		return 0;
	for (int k = 0; k < plan->n; k++) {
		const struct probe *p = &plan->probes[k];
		uint64_t off = p->offset - p->delta, addr = 0;
		uint8_t file[32], code[32];
		int fd;

		if ((fd = open(p->path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		bool ok = pread(fd, file, sizeof(file), off) == sizeof(file) && (addr = maps_file_addr(maps, fd, off)) &&
			  !remote_read(r, addr, code, sizeof(code));
		close(fd);
		if (ok)
			found += stale_slot(r, maps, p, addr - p->func_vaddr, restore, &failed);
		/* At the entry (builds before the jump could follow an undone instruction), or after it. */
		size_t k = p->stub_skip;
		if (ok && (!k || !earlier_stub(maps, addr + k, code + k)))
			k = 0;
		if (!ok || !memcmp(file + k, code + k, JMP_REL32_LEN) || !earlier_stub(maps, addr + k, code + k))
			continue;
		found++;
		if (!restore)
			continue;
		if (remote_write(r, addr + k, file + k, patch_len(file + k, code + k, sizeof(code) - k))) {
			ht_err("PID %d: %s jumps to an earlier heaptrace's stub and cannot be restored", r->pid, p->func);
			failed++;
			continue;
		}
		ht_info("fast path: PID %d: %s still jumped to an earlier heaptrace's stub: restored", r->pid, p->func);
	}
	free(maps);
	return failed ? -1 : found;
}

int inject_reclaim(struct remote *r, const struct probe_plan *plan)
{
	return stale_jumps(r, plan, true);
}

/* The parent of pid, from /proc/PID/stat ("pid (comm) state ppid"; comm may hold anything but the last ')'). */
static pid_t parent_of(pid_t pid)
{
	char path[64], *stat, *end;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((stat = read_text_file(path)) && (end = strrchr(stat, ')')))
		sscanf(end + 1, " %*c %d", &ppid);
	free(stat);
	return ppid;
}

int inject_reclaim_held(pid_t pid, const struct probe_plan *plan)
{
	char path[64];
	struct remote r = { .pid = pid };
	pid_t parent = parent_of(pid);
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	if ((r.mem_fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return -1;
	/* Its memory is its parent's (vfork), whose other threads may be running there: not written, only looked at. */
	bool shared = parent > 0 && inject_shares_memory(parent, pid);
	rc = stale_jumps(&r, plan, !shared);
	if (shared && rc > 0) {
		ht_err("PID %d: shares the memory of PID %d, whose functions jump to an earlier heaptrace's stub: "
		       "not traced", pid, parent);
		rc = -1;
	}
	close(r.mem_fd);
	return rc;
}

int inject_reclaim_running(pid_t pid, const struct probe_plan *plan, bool (*traced)(void *arg, pid_t tid), void *arg)
{
	char path[64];
	struct remote r = { .pid = pid };
	int rc, err;

	/* Looked at first without stopping anything: nearly always there is nothing to restore. */
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	if ((r.mem_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	rc = stale_jumps(&r, plan, false);
	close(r.mem_fd);
	if (rc <= 0)
		return rc;
	if ((err = remote_stop(&r, pid, traced, arg))) {
		ht_err("PID %d: %d functions jump to an earlier heaptrace's stub, and its threads cannot be stopped to "
		       "restore them (%s)", pid, rc, strerror(-err));
		remote_resume(&r);
		remote_free(&r);
		return -1;
	}
	rc = stale_jumps(&r, plan, true);
	remote_resume(&r);
	remote_free(&r);
	return rc;
}

/* A child of a process with a stub shares its memory (vfork, CLONE_VM): the same stub serves both. */
bool inject_shares_memory(pid_t a, pid_t b)
{
	long same = syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0);

	return same == 0;
}
