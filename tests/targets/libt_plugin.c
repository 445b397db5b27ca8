/*
 * A plugin for t_dlopen: a shared library that the target dlopen()s after
 * heaptrace has built its unwind tables, built the way distributions build
 * code (-O2 -fomit-frame-pointer, see the Makefile): no function here keeps
 * a frame pointer, so only its CFI (its table, loaded once heaptrace has
 * seen the new mapping) unwinds through it.
 *
 *   plugin_early   3 x malloc(333), kept: called right after dlopen(),
 *                  before heaptrace can have loaded the table
 *   plugin_entry -> plugin_mid -> plugin_alloc
 *                  5 x malloc(777), kept (3885 bytes): called once the table
 *                  is loaded.  plugin_mid and plugin_entry keep their return
 *                  addresses on the stack, but rbp holds no frame of theirs
 *                  (it is the caller's value, or one of plugin_mid's
 *                  variables): a frame-pointer walk skips them.
 *
 * Built with -DPLUGIN_B into libt_plugin_b.so: the same functions, each
 * 0x300 bytes further into the library (plugin_b_pad, first, is that many
 * bytes of nops), allocating 4 x 555 bytes in plugin_alloc, and as many
 * pages: dlopen()ed after libt_plugin.so's dlclose(), it takes its place,
 * and libt_plugin.so, opened again after its dlclose(), takes its own, at
 * addresses where libt_plugin_b.so had other code (and other CFI).
 *
 * plugin_mid and plugin_alloc are hidden (plain calls, no PLT) and noclone
 * (no plugin_mid.constprop.0); volatile counts keep their loops and
 * arguments opaque.  No stdio.  tests/run.sh (scenario dlopen) holds the
 * expected numbers.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))
#define HIDDEN __attribute__((visibility("hidden")))

void *volatile plugin_blocks[5];
void *volatile plugin_early_blocks[3];
#ifdef PLUGIN_B
volatile int plugin_count = 4;
volatile size_t plugin_size = 555;

HIDDEN NOINLINE void plugin_b_pad(void)
{
	__asm__ volatile(".skip 0x300, 0x90");
}
#else
volatile int plugin_count = 5;
volatile size_t plugin_size = 777;
#endif

HIDDEN NOINLINE void plugin_alloc(int i)
{
	plugin_blocks[i] = malloc(plugin_size);
}

HIDDEN NOINLINE int plugin_mid(int n)
{
	int i;

	for (i = 0; i < n; i++)
		plugin_alloc(i);
	return i;       /* used by the caller: the call is no tail call */
}

NOINLINE int plugin_entry(void)
{
	return plugin_mid(plugin_count) == plugin_count ? 0 : 1;
}

NOINLINE void plugin_early(void)
{
	for (int i = 0; i < 3; i++)
		plugin_early_blocks[i] = malloc(333);
}
