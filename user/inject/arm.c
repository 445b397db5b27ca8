/*
 * A launched command: the stub goes in once the dynamic loader has mapped
 * the allocator, at a breakpoint on the loader's r_brk (where it tells
 * debuggers that its objects changed), armed at the command's exec.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject/inject.h"
#include "probe/plan.h"
#include "util/elfobj.h"
#include "util/procfs.h"

/* The dynamic loader's base (AT_BASE) and path, from the auxiliary vector and the memory map. */
static uint64_t loader_base(pid_t pid, char *path, size_t len)
{
	char file[64];
	uint64_t av[2], base = 0;
	int fd;

	snprintf(file, sizeof(file), "/proc/%d/auxv", pid);
	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	while (read(fd, av, sizeof(av)) == sizeof(av) && av[0])
		if (av[0] == 7 /* AT_BASE */)
			base = av[1];
	close(fd);
	if (!base)
		return 0;
	char *maps = proc_maps(pid);
	struct map_entry e;
	path[0] = '\0';
	for (const char *pos = maps; maps && maps_next(&pos, &e);)
		if (e.lo == base && e.path[0] == '/') {
			snprintf(path, len, "/proc/%d/root%s", pid, e.path);
			break;
		}
	free(maps);
	return path[0] ? base : 0;
}

/*
 * The loader's r_brk and r_state in in->pid, and path and the file offset
 * of r_brk (its _dl_debug_state) in it.  -1: a static program (everything
 * is mapped already), or a loader without the symbols.
 */
static int loader_debug(struct inject *in, char *path, size_t len, uint64_t *file_off)
{
	struct elfobj o;
	uint64_t base = loader_base(in->pid, path, len), brk, rdebug, size;

	if (!base)
		return -1;
	if (elfobj_open(&o, path, false))
		return -1;
	bool found = elfobj_func(&o, "_dl_debug_state", &brk, &size);
	bool have_r_debug = elfobj_object(&o, "_r_debug", &rdebug);
	int64_t off = found ? elfobj_file_offset(&o, brk) : -1;
	elfobj_close(&o);
	if (off < 0 || !have_r_debug)
		return -1;
	in->r_brk = base + brk;
	in->r_state = base + rdebug + 24;       /* struct r_debug: r_version, r_map, r_brk, then r_state */
	*file_off = off;
	return 0;
}

int inject_arm(struct inject *in, struct remote *r)
{
	char path[4300];
	uint64_t off;
	uint8_t int3 = 0xcc;

	if (loader_debug(in, path, sizeof(path), &off))
		return -1;
	if (remote_read(r, in->r_brk, &in->r_brk_byte, 1) || remote_write(r, in->r_brk, &int3, 1))
		return -1;
	in->armed = true;
	return 0;
}

int inject_arm_hook(struct inject *in, char *path, size_t len, uint64_t *offset)
{
	if (loader_debug(in, path, len, offset))
		return -1;
	in->armed = in->hooked = true;
	return 0;
}

/* Is the allocator mapped yet (the first function's object)? */
static bool allocator_mapped(struct inject *in, const struct probe_plan *plan)
{
	const struct probe *p = &plan->probes[in->fns[0].probe];

	char *maps = proc_maps(in->pid);
	bool mapped = maps && maps_path_addr(maps, p->path, p->offset - p->delta);
	free(maps);
	return mapped;
}

int inject_on_loader(struct inject *in, pid_t tid, struct probe_plan *plan, struct tracer *tr)
{
	struct remote r;
	int32_t state = -1;

	if (!in->armed || !in->hooked)
		return 0;
	/*
	 * Whatever goes wrong settles it (armed no more, not enabled: the
	 * caller gives it uprobes), so that no process runs on with neither.
	 */
	if (remote_adopt(&r, in->pid, tid)) {
		in->armed = false;
		snprintf(in->why, sizeof(in->why), "its thread could not be taken at its loader");
		return 1;
	}
	/* Nothing of ours in its memory to undo: only whether the loader is done. */
	if (remote_read(&r, in->r_state, &state, sizeof(state))) {
		in->armed = false;
		snprintf(in->why, sizeof(in->why), "its loader's state could not be read");
	} else if (state == 0 /* RT_CONSISTENT */) {
		in->armed = false;
		/* One thread stopped: another running (a later dlopen's) could be inside a function we patch. */
		unsigned long long threads = 0;
		if (!proc_status_num(in->pid, "Threads:", 10, &threads) || threads != 1)
			snprintf(in->why, sizeof(in->why), "it has threads when its loader is done");
		else if (allocator_mapped(in, plan))
			inject_install(in, &r, plan, tr);
		remote_sync(&r);
	}
	remote_free(&r);
	return 1;
}

int inject_on_trap(struct inject *in, pid_t tid, struct probe_plan *plan, struct tracer *tr)
{
	struct remote r;
	int32_t state = -1;

	if (!in->armed || remote_adopt(&r, in->pid, tid))
		goto not_ours;
	if (r.t[0].regs.rip != in->r_brk + 1) {
		remote_free(&r);
		goto not_ours;
	}
	/* Our int3: run the real first instruction from where the breakpoint was. */
	r.t[0].regs.rip = in->r_brk;
	remote_read(&r, in->r_state, &state, sizeof(state));
	remote_write(&r, in->r_brk, &in->r_brk_byte, 1);
	if (state == 0 /* RT_CONSISTENT */ && in->on_loaded) {
		in->armed = false;
		remote_sync(&r);
		in->on_loaded(in->on_loaded_arg);
	} else if (state == 0 /* RT_CONSISTENT */ && allocator_mapped(in, plan)) {
		in->armed = false;
		/* A failed install gives every function back; a good one may have given back some (probes_attach_fallback). */
		inject_install(in, &r, plan, tr);
		probes_attach_fallback(plan, tr, in->pid);
		remote_sync(&r);
	} else {
		/* Not yet: step over the real instruction, put the breakpoint back. */
		uint8_t int3 = 0xcc;
		if (remote_step(&r) || remote_write(&r, in->r_brk, &int3, 1) || remote_sync(&r))
			in->armed = false;
	}
	remote_free(&r);
	return 1;
not_ours:
	return 0;
}
