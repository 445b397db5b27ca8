/*
 * The stub's walk in the target: its tables' mapping and what it is told.
 * The mapping is never writable in the target and never executable; a
 * forked child shares it (MAP_SHARED), so it reads the tables of the code
 * it inherited.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject/remote.h"
#include "inject/state.h"
#include "inject/phase.h"
#include "inject/share.h"
#include "inject/sigframe.h"
#include "util/log.h"
#include "util/procfs.h"

#define NAME "heaptrace-unwind"

static uint64_t share_bytes(uint32_t rows)
{
	return (HT_SHARE_ROWS_OFF + (uint64_t)rows * sizeof(struct ht_unwind_row) + 4095) & ~4095ull;
}

/* An earlier session's mapping of the same size (the same tables' room): used again, not mapped beside it. */
static uint64_t reuse(struct inject *in, const char *maps, uint64_t size)
{
	struct map_entry e;
	char path[128];

	for (const char *pos = maps; maps_next(&pos, &e);) {
		if (!strstr(e.path, "memfd:" NAME) || e.hi - e.lo != size || e.perms[0] != 'r' || e.perms[1] != '-' ||
		    e.perms[2] != '-' || e.perms[3] != 's')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, in->pid, e.lo, e.hi);
		if ((in->share_fd = open(path, O_RDWR | O_CLOEXEC)) >= 0)
			return e.lo;
	}
	return 0;
}

/* A new file in the target, mapped there read-only and shared; heaptrace keeps a descriptor. */
static uint64_t make(struct inject *in, struct remote *r, uint64_t size, char *why, size_t len)
{
	static const char name[] = NAME;
	char path[64];
	int err;
	uint64_t name_at = in->base + STUB_GADGET_OFF + REMOTE_GADGET_SIZE + 32;

	_Static_assert(REMOTE_GADGET_SIZE + 32 + sizeof(name) <= STUB_FILE_SIZE - STUB_GADGET_OFF, "the name does not fit beside the gadget");
	if ((err = remote_write(r, name_at, name, sizeof(name)))) {
		snprintf(why, len, "cannot write the target's memory: %s", strerror(-err));
		return 0;
	}
	long fd = remote_call(r, SYS_memfd_create, (long)name_at, MFD_CLOEXEC, 0, 0, 0, 0, &err);
	inject_phase("share-memfd");
	if (err) {
		snprintf(why, len, "memfd_create in the target: %s", strerror(-err));
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", in->pid, fd);
	in->share_fd = open(path, O_RDWR | O_CLOEXEC);
	long at = 0;
	if (in->share_fd < 0 || ftruncate(in->share_fd, (off_t)size)) {
		snprintf(why, len, "cannot size the tables' file %s: %s", path, strerror(errno));
	} else {
		at = remote_call(r, SYS_mmap, 0, (long)size, PROT_READ, MAP_SHARED, fd, 0, &err);
		if (err || at <= 0) {
			snprintf(why, len, "mmap of the tables in the target: %s", strerror(err ? -err : EINVAL));
			at = 0;
		}
	}
	inject_phase("share-mapped");
	remote_call(r, SYS_close, fd, 0, 0, 0, 0, 0, &err);
	inject_phase("share-closed");
	return (uint64_t)at;
}

int share_install(struct inject *in, struct remote *r, const char *maps)
{
	char why[200] = "";
	uint64_t size = share_bytes(in->share_rows);

	share_free(in);
	if (in->walk != STUB_WALK_CFI || !in->share_rows)
		return 0;
	r->gadget = in->base + STUB_GADGET_OFF;
	in->share_addr = reuse(in, maps, size);
	bool again = in->share_addr != 0;
	if (!again)
		in->share_addr = make(in, r, size, why, sizeof(why));
	if (in->share_addr) {
		in->share_map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, in->share_fd, 0);
		if (in->share_map == MAP_FAILED) {
			in->share_map = NULL;
			snprintf(why, sizeof(why), "cannot map the tables' file: %s", strerror(errno));
		}
	}
	if (!in->share_map) {
		ht_info("fast path: no CFI tables in the target (%s): the BPF side walks its stacks", why);
		share_free(in);
		in->share_addr = 0;
		return -1;
	}
	in->share_size = size;
	struct ht_share *sh = in->share_map;
	/*
	 * An earlier session's: a thread stopped inside a walk reads on when
	 * it runs again, and must find the index changed (gen) and both
	 * empty, before any row under it is written anew.
	 */
	sh->index[0].n = sh->index[1].n = 0;
	__atomic_store_n(&sh->gen, sh->gen + 2, __ATOMIC_RELEASE);
	sh->rows = in->share_rows;
	ht_info("fast path: the CFI tables' mapping at 0x%" PRIx64 " (%" PRIu64 " KiB%s)", in->share_addr,
		size / 1024, again ? ", an earlier heaptrace's, used again" : "");
	return 0;
}

void share_walk_info(struct inject *in, struct remote *r, struct stub_walk_info *w)
{
	struct map_entry e;
	char *maps = proc_maps(in->pid);
	uint64_t session = 0;

	/*
	 * The walk's cache of rows and its threads' last walks (stub/unwind.c)
	 * may hold an earlier installation's (a stub used again keeps its
	 * data): this one's session is one more than the last, never 0 (a new
	 * stub's empty entries), so none of theirs is taken for this one's.
	 * Unread (the data's write fails next, most likely): a random one.
	 */
	if (remote_read(r, in->base + STUB_DATA_OFF + offsetof(struct stub_data, w.session), &session, sizeof(session)) &&
	    getrandom(&session, sizeof(session), 0) != sizeof(session))
		session = (uint64_t)time(NULL);
	memset(w, 0, sizeof(*w));
	w->session = (uint32_t)(session + 1) ? session + 1 : session + 2;
	w->share = in->share_addr;
	w->pid = (uint64_t)in->pid;
	for (const char *pos = maps; maps && maps_next(&pos, &e);)
		if (!strcmp(e.path, "[stack]")) {
			w->main_lo = e.lo;
			w->main_hi = e.hi;
		}
	free(maps);
	if (!in->restorer)
		in->restorer = remote_restorer(r);
	w->restorers[0] = in->restorer;
}

void share_free(struct inject *in)
{
	if (in->share_map)
		munmap(in->share_map, in->share_size);
	if (in->share_fd >= 0)
		close(in->share_fd);
	in->share_map = NULL;
	in->share_fd = -1;
	in->share_size = 0;
}
