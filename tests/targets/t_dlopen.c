/*
 * Target for heaptrace's tables of dlopen()ed code (tests/run.sh, scenario
 * dlopen).  Usage: t_dlopen LIBRARY FIFO [OTHER], LIBRARY being
 * libt_plugin.so and OTHER libt_plugin_b.so.
 *
 *   1. dlopen(LIBRARY), then at once plugin_early (3 x 333 bytes): heaptrace
 *      has no table for the library yet, its frames unwind by frame pointer
 *   2. prints "opened", then blocks until a line is written to FIFO (the
 *      harness waits for heaptrace -v's "unwind tables for N objects mapped
 *      since the start")
 *   3. plugin_entry -> plugin_mid -> plugin_alloc: 5 x 777 bytes, unwound
 *      by the library's table
 * With OTHER, libraries replace each other at the same addresses:
 *   4. dlclose(LIBRARY), dlopen(OTHER), prints "other here" if it is where
 *      LIBRARY was, else "other elsewhere", blocks on FIFO (for
 *      OTHER's table), then OTHER's plugin_entry (4 x 555 bytes); stacks
 *      meet OTHER's code, where LIBRARY's was
 *   5. dlclose(OTHER), dlopen(LIBRARY) again; prints "reopened here" if it
 *      is where OTHER was, else "reopened elsewhere"; blocks on FIFO
 *   6. LIBRARY's plugin_entry again: 5 x 777 bytes, the same stack as in 3
 * Then prints "done", exits 0 (the last library is not dlclose()d).
 * Built -O2 -fomit-frame-pointer (see the Makefile).  No stdio; dlopen()
 * allocates in ld.so, under main.
 */
#define _GNU_SOURCE     /* dlinfo */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#include "sync.h"

/* dlopen, and dlsym of plugin_entry (and of plugin_early in *early); exits 2 if either fails. */
static void *open_plugin(const char *path, int (**entry)(void), void (**early)(void))
{
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		say("dlopen failed\n");
		exit(2);
	}
	*entry = (int (*)(void))dlsym(h, "plugin_entry");
	if (early)
		*early = (void (*)(void))dlsym(h, "plugin_early");
	if (!*entry || (early && !*early)) {
		say("dlsym failed\n");
		exit(2);
	}
	return h;
}

static ElfW(Addr) base_of(void *h)
{
	struct link_map *lm;

	return dlinfo(h, RTLD_DI_LINKMAP, &lm) ? 0 : lm->l_addr;
}

int main(int argc, char **argv)
{
	int (*entry)(void);
	void (*early)(void);

	if (argc != 3 && argc != 4) {
		say("usage: t_dlopen LIBRARY FIFO [OTHER]\n");
		return 2;
	}
	void *h = open_plugin(argv[1], &entry, &early);
	early();
	say("opened\n");
	wait_line(argv[2]);
	int rc = entry();
	if (argc == 4) {
		ElfW(Addr) first = base_of(h);
		dlclose(h);
		h = open_plugin(argv[3], &entry, NULL);
		ElfW(Addr) other = base_of(h);
		say(first && other == first ? "other here\n" : "other elsewhere\n");
		wait_line(argv[2]);
		rc |= entry();
		dlclose(h);
		h = open_plugin(argv[1], &entry, NULL);
		say(other && base_of(h) == other ? "reopened here\n" : "reopened elsewhere\n");
		wait_line(argv[2]);
		rc |= entry();
	}
	say("done\n");
	return rc;
}
