/*
 * The page of jumps (jumps.h): built for its address, and mapped into the
 * target as the stub's file is, a memfd of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inject/jumps.h"
#include "inject/phase.h"
#include "inject/remote.h"
#include "insn/relocate.h"
#include "probe/plan.h"
#include "util/procfs.h"

int jumps_build(const struct inject *in, const struct probe_plan *plan, uint8_t *page, char *why, size_t len)
{
	memset(page, 0xcc, JUMPS_SIZE);
	for (int i = 0; i < in->n; i++) {
		const struct inject_fn *f = &in->fns[i];
		const struct probe *p = &plan->probes[f->probe];
		uint8_t *s = page + i * JUMPS_SLOT;
		uint64_t entry = inject_entry(in, i);
		size_t orig_len;

		if (!f->far)
			continue;
		/* jmp *0(%rip), then its entry's address: the stub is beyond a rel32 jump of here. */
		s[0] = 0xff, s[1] = 0x25;
		memset(s + 2, 0, 4);
		memcpy(s + 6, &entry, 8);
		if (relocate_prologue(f->saved, sizeof(f->saved), p->func_size, f->addr, jumps_slot(in, i) + 16, f->skip,
				      s + 16, &orig_len, why, len) != (int)f->len)
			return -1;
		if (16 + orig_len > JUMPS_SLOT) {
			snprintf(why, len, "the displaced code of %s does not fit", p->func);
			return -1;
		}
	}
	return 0;
}

int jumps_map(struct inject *in, struct remote *r, const uint8_t *page, char *why, size_t len)
{
	static const char name[16] = "heaptrace-jumps";
	uint64_t name_at = in->base + STUB_GADGET_OFF + REMOTE_GADGET_SIZE;
	char path[64];
	int err, fd = -1;
	long at = 0, tfd;

	*why = 0;
	if ((err = remote_write(r, name_at, name, sizeof(name)))) {
		snprintf(why, len, "cannot write the target's memory: %s", strerror(-err));
		goto fail;
	}
	tfd = remote_call(r, SYS_memfd_create, (long)name_at, MFD_CLOEXEC, 0, 0, 0, 0, &err);
	inject_phase("jumps-memfd");
	if (err) {
		snprintf(why, len, "memfd_create in the target: %s", strerror(-err));
		goto fail;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", in->pid, tfd);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 || pwrite(fd, page, JUMPS_SIZE, 0) != JUMPS_SIZE)
		snprintf(why, len, "cannot write the page of jumps %s: %s", path, strerror(errno));
	else
		at = remote_call(r, SYS_mmap, (long)in->jumps, JUMPS_SIZE, PROT_READ | PROT_EXEC,
				 MAP_PRIVATE | MAP_FIXED_NOREPLACE, tfd, 0, &err);
	if (fd >= 0)
		close(fd);
	if (!*why && (err || (uint64_t)at != in->jumps))
		snprintf(why, len, "mmap of the page of jumps in the target: %s", err ? strerror(-err) : "elsewhere");
	inject_phase("jumps-mapped");
	remote_call(r, SYS_close, tfd, 0, 0, 0, 0, 0, &err);
	if (*why) {
		/* Mapped elsewhere (a kernel without MAP_FIXED_NOREPLACE): not left there. */
		if (at > 0 && (uint64_t)at != in->jumps)
			remote_call(r, SYS_munmap, at, JUMPS_SIZE, 0, 0, 0, 0, &err);
		goto fail;
	}
	return 0;
fail:
	in->jumps = 0;
	return -1;
}

bool jumps_reuse(struct inject *in, struct remote *r, const struct probe_plan *plan, const char *maps)
{
	uint8_t want[JUMPS_SIZE], now[JUMPS_SIZE];
	uint64_t planned = in->jumps;
	struct map_entry e;
	char why[200];

	for (const char *pos = maps; maps_next(&pos, &e);) {
		if (!strstr(e.path, "memfd:heaptrace-jumps") || e.hi - e.lo != JUMPS_SIZE || e.perms[2] != 'x' ||
		    place_farthest(e.lo, e.hi, in->far_lo, in->far_hi) >= PLACE_REACH)
			continue;
		in->jumps = e.lo;
		if (!jumps_build(in, plan, want, why, sizeof(why)) && !remote_read(r, e.lo, now, JUMPS_SIZE) &&
		    !memcmp(want, now, JUMPS_SIZE))
			return true;
	}
	in->jumps = planned;
	return false;
}
