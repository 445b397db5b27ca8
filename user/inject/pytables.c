#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "inject/pytables.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif
#include "util/log.h"
#include "util/procfs.h"

/*
 * The page: a magic line that tells a later heaptrace it is ours, the
 * name it has in /proc/PID/maps ("[anon:heaptrace-python]", where the
 * kernel names anonymous memory), then 16-byte jumps: jmp *0(%rip) and
 * the 8-byte address, which reach any function wherever the page is.
 */
#define PAGE 4096
#define MAGIC "heaptrace-pyjmp1"
#define NAME_OFF 16
#define NAME "heaptrace-python"
#define JUMPS_OFF 64
#define JUMP_SIZE 16

/* A page of ours already in the process (an earlier heaptrace's): its address, or 0. */
static uint64_t find_page(struct remote *r, const char *maps)
{
	struct map_entry e;
	char magic[16];

	for (const char *pos = maps; maps_next(&pos, &e);)
		if (e.hi - e.lo == PAGE && !strcmp(e.perms, "r-xp") && (!e.path[0] || strstr(e.path, NAME)) &&
		    !remote_read(r, e.lo, magic, sizeof(magic)) && !memcmp(magic, MAGIC, sizeof(magic)))
			return e.lo;
	return 0;
}

static uint64_t map_page(struct remote *r, char *why, size_t len)
{
	uint8_t head[JUMPS_OFF] = { 0 };
	int err;
	long at = remote_call(r, SYS_mmap, 0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &err);

	if (err) {
		snprintf(why, len, "mmap in the target: %s", strerror(-err));
		return 0;
	}
	memcpy(head, MAGIC, 16);
	memcpy(head + NAME_OFF, NAME, sizeof(NAME));
	if ((err = remote_write(r, at, head, sizeof(head)))) {
		snprintf(why, len, "cannot write the target's memory at 0x%lx: %s", at, strerror(-err));
		remote_call(r, SYS_munmap, at, PAGE, 0, 0, 0, 0, &err);
		return 0;
	}
	/* A name for people reading its maps; kernels without CONFIG_ANON_VMA_NAME refuse it, which is harmless. */
	remote_call(r, SYS_prctl, PR_SET_VMA, PR_SET_VMA_ANON_NAME, at, PAGE, at + NAME_OFF, 0, &err);
	remote_call(r, SYS_mprotect, at, PAGE, PROT_READ | PROT_EXEC, 0, 0, 0, &err);
	if (err) {
		snprintf(why, len, "mprotect in the target: %s", strerror(-err));
		return 0;       /* left mapped, writable, unused: it holds no jump */
	}
	return at;
}

/*
 * The page's jump to func: one already there, or a new one, written while
 * the page is writable for a moment (the kernel refuses a forced write
 * into anonymous memory that is not; every thread is stopped).  0 when
 * the page is full or cannot be written.
 */
static uint64_t jump_to(struct remote *r, uint64_t page, uint64_t func)
{
	uint8_t want[JUMP_SIZE] = { 0xff, 0x25, 0, 0, 0, 0 }, have[JUMP_SIZE], zero[JUMP_SIZE] = { 0 };
	int err;

	memcpy(want + 6, &func, 8);
	for (uint64_t at = page + JUMPS_OFF; at + JUMP_SIZE <= page + PAGE; at += JUMP_SIZE) {
		if (remote_read(r, at, have, sizeof(have)))
			return 0;
		if (!memcmp(have, want, sizeof(want)))
			return at;
		if (memcmp(have, zero, sizeof(zero)))
			continue;
		remote_call(r, SYS_mprotect, page, PAGE, PROT_READ | PROT_WRITE, 0, 0, 0, &err);
		bool ok = !err && !remote_write(r, at, want, sizeof(want));
		remote_call(r, SYS_mprotect, page, PAGE, PROT_READ | PROT_EXEC, 0, 0, 0, &err);
		return ok && !err ? at : 0;
	}
	return 0;
}

int pytables_redirect(struct pytables *pt, const struct cpy_tables *t, struct remote *r)
{
	char why[200] = "";
	uint64_t page = 0;
	int done = 0;

	char *maps = proc_maps(r->pid);
	if (!maps)
		return 0;
	for (int i = 0; i < t->n; i++) {
		const struct cpy_slot *s = &t->s[i];
		struct stat st;
		uint64_t func, at, now, jump;

		if (!s->inlined || stat(s->path, &st) || !(func = maps_exec_addr(maps, st.st_dev, st.st_ino, s->func_off)))
			continue;
		at = s->slot + (func - s->func);
		if (remote_read(r, at, &now, sizeof(now))) {
			ht_info("python: PID %d: the slot of %s at 0x%lx cannot be read", r->pid, s->wrapper, at);
			continue;
		}
		if (now != func) {
			/* PYTHONMALLOC, tracemalloc, debug hooks, an earlier heaptrace's jump, or not relocated yet. */
			bool ours = false;
			for (int k = 0; k < pt->n; k++)
				ours |= pt->w[k].pid == r->pid && pt->w[k].at == at;
			if (!ours)
				ht_info("python: PID %d: the slot of %s holds 0x%lx, not its default function 0x%lx: left "
					"as it is; calls the build inlines are not seen", r->pid, s->wrapper, now, func);
			continue;
		}
		if (pt->n == PYT_MAX)
			break;
		if (!page && !(page = find_page(r, maps)) && !(page = map_page(r, why, sizeof(why)))) {
			ht_info("python: PID %d: no page for the jumps (%s): the calls the build inlines are not seen",
				r->pid, why);
			break;
		}
		if (!(jump = jump_to(r, page, func)) || remote_write(r, at, &jump, sizeof(jump))) {
			ht_info("python: PID %d: the slot of %s cannot be redirected", r->pid, s->wrapper);
			continue;
		}
		pt->w[pt->n++] = (struct pyt_write){ r->pid, at, func, jump };
		done++;
	}
	free(maps);
	if (done)
		ht_info("python: PID %d: %d allocator table slots point at jumps to their own functions (page 0x%lx): "
			"the inlined copies are bypassed, every call is seen", r->pid, done, page);
	return done;
}

void pytables_forget(struct pytables *pt, pid_t pid)
{
	int k = 0;

	for (int i = 0; i < pt->n; i++)
		if (pt->w[i].pid != pid)
			pt->w[k++] = pt->w[i];
	pt->n = k;
}

void pytables_restore(struct pytables *pt, struct remote *r)
{
	int back = 0, left = 0;

	for (int i = 0; i < pt->n; i++) {
		struct pyt_write *w = &pt->w[i];
		uint64_t now;

		if (w->pid != r->pid)
			continue;
		if (!remote_read(r, w->at, &now, sizeof(now)) && now == w->jump &&
		    !remote_write(r, w->at, &w->func, sizeof(w->func)))
			back++;
		else
			left++;
	}
	if (back || left)
		ht_info("python: PID %d: %d allocator table slots restored%s", r->pid, back,
			left ? "; others had been changed since (tracemalloc?) and keep their value: the jumps stay "
			       "mapped, so they still work" : "");
	pytables_forget(pt, r->pid);
}

pid_t pytables_next_pid(const struct pytables *pt)
{
	return pt->n ? pt->w[0].pid : 0;
}
