/*
 * Target for heaptrace's tables of dlopen()ed code (tests/run.sh, scenario
 * dlopen).  Usage: t_dlopen LIBRARY FIFO, LIBRARY being libt_plugin.so.
 *
 *   1. dlopen(LIBRARY), then at once plugin_early (3 x 333 bytes): heaptrace
 *      has no table for the library yet, its frames unwind by frame pointer
 *   2. prints "opened", then blocks until a line is written to FIFO (the
 *      harness waits for heaptrace -v's "unwind tables for N objects mapped
 *      since the start")
 *   3. plugin_entry -> plugin_mid -> plugin_alloc: 5 x 777 bytes, unwound
 *      by the library's table
 *   4. prints "done", exits 0 (the library is not dlclose()d)
 * Built -O2 -fomit-frame-pointer (see the Makefile).  No stdio; dlopen()
 * allocates in ld.so, under main.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "sync.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		say("usage: t_dlopen LIBRARY FIFO\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		say("dlopen failed\n");
		return 2;
	}
	void (*early)(void) = (void (*)(void))dlsym(h, "plugin_early");
	int (*entry)(void) = (int (*)(void))dlsym(h, "plugin_entry");
	if (!early || !entry) {
		say("dlsym failed\n");
		return 2;
	}
	early();
	say("opened\n");
	wait_line(argv[2]);
	int rc = entry();
	say("done\n");
	return rc;
}
