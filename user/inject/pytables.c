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

static void make_jump(uint8_t *j, uint64_t func)
{
	static const uint8_t jmp[6] = { 0xff, 0x25, 0, 0, 0, 0 };       /* jmp *0(%rip) */

	memset(j, 0, JUMP_SIZE);
	memcpy(j, jmp, sizeof(jmp));
	memcpy(j + 6, &func, 8);
}

/* Is the jump at `at` one to func? */
static bool jump_at(struct remote *r, uint64_t at, uint64_t func)
{
	uint8_t want[JUMP_SIZE], have[JUMP_SIZE];

	make_jump(want, func);
	return !remote_read(r, at, have, sizeof(have)) && !memcmp(have, want, sizeof(want));
}

/* An existing page's jump to func, or 0 (an existing page is never written again). */
static uint64_t jump_in(struct remote *r, uint64_t page, uint64_t func)
{
	uint8_t want[JUMP_SIZE], have[JUMP_SIZE];

	make_jump(want, func);
	for (uint64_t at = page + JUMPS_OFF; at + JUMP_SIZE <= page + PAGE; at += JUMP_SIZE)
		if (!remote_read(r, at, have, sizeof(have)) && !memcmp(have, want, sizeof(want)))
			return at;
	return 0;
}

/*
 * A new page with the jumps to funcs[0..n), written while it is still only
 * writable and made read+execute before any slot points into it: a page a
 * slot uses is never made writable (not executable) again, so a heaptrace
 * killed at any moment leaves every slot leading to code.  Its address,
 * or 0 with why.
 */
static uint64_t map_page(struct remote *r, const uint64_t *funcs, int n, char *why, size_t len)
{
	static uint8_t img[PAGE];
	int err;
	long at = remote_call(r, SYS_mmap, 0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &err);

	if (err) {
		snprintf(why, len, "mmap in the target: %s", strerror(-err));
		return 0;
	}
	memset(img, 0, sizeof(img));
	memcpy(img, MAGIC, 16);
	memcpy(img + NAME_OFF, NAME, sizeof(NAME));
	for (int i = 0; i < n; i++)
		make_jump(img + JUMPS_OFF + i * JUMP_SIZE, funcs[i]);
	if ((err = remote_write(r, at, img, JUMPS_OFF + n * JUMP_SIZE))) {
		snprintf(why, len, "cannot write the target's memory at 0x%lx: %s", at, strerror(-err));
		remote_call(r, SYS_munmap, at, PAGE, 0, 0, 0, 0, &err);
		return 0;
	}
	/* A name for people reading its maps; kernels without CONFIG_ANON_VMA_NAME refuse it, which is harmless. */
	remote_call(r, SYS_prctl, PR_SET_VMA, PR_SET_VMA_ANON_NAME, at, PAGE, at + NAME_OFF, 0, &err);
	remote_call(r, SYS_mprotect, at, PAGE, PROT_READ | PROT_EXEC, 0, 0, 0, &err);
	if (err) {
		snprintf(why, len, "mprotect in the target: %s", strerror(-err));
		return 0;       /* left mapped, writable, unused: no slot points into it */
	}
	return at;
}

int pytables_redirect(struct pytables *pt, const struct cpy_tables *t, struct remote *r)
{
	char why[200] = "";
	uint64_t page = 0, funcs[PYT_MAX], slots[PYT_MAX], jumps[PYT_MAX];
	const char *names[PYT_MAX];
	int n = 0, done = 0;

	_Static_assert(JUMPS_OFF + PYT_MAX * JUMP_SIZE <= PAGE, "the jumps fit in a page");
	char *maps = proc_maps(r->pid);
	if (!maps)
		return 0;
	for (int i = 0; i < t->n && pt->n + n < PYT_MAX; i++) {
		const struct cpy_slot *s = &t->s[i];
		uint64_t func, at, now;

		if (!s->inlined || !(func = maps_path_addr(maps, s->path, s->func_off)))
			continue;
		at = s->slot + (func - s->func);
		if (remote_read(r, at, &now, sizeof(now))) {
			ht_info("python: PID %d: the slot of %s at 0x%lx cannot be read", r->pid, s->wrapper, at);
			continue;
		}
		if (now != func && (page || (page = find_page(r, maps))) && now >= page + JUMPS_OFF &&
		    now + JUMP_SIZE <= page + PAGE && jump_at(r, now, func)) {
			/* An earlier heaptrace's jump (it was killed): taken over as this session's, given back at its end. */
			pt->w[pt->n++] = (struct pyt_write){ r->pid, at, func, now, 0 };
			done++;
			continue;
		}
		if (now != func) {
			/* PYTHONMALLOC, tracemalloc, debug hooks, or not relocated yet. */
			bool ours = false;
			for (int k = 0; k < pt->n; k++)
				ours |= pt->w[k].pid == r->pid && pt->w[k].at == at;
			if (!ours)
				ht_info("python: PID %d: the slot of %s holds 0x%lx, not its default function 0x%lx: left "
					"as it is; calls the build inlines are not seen", r->pid, s->wrapper, now, func);
			continue;
		}
		funcs[n] = func;
		slots[n] = at;
		names[n++] = s->wrapper;
	}
	/* An earlier heaptrace's page when it has every jump; else a new one, whole before it is used. */
	if (n && (page || (page = find_page(r, maps))))
		for (int i = 0; i < n && page; i++)
			if (!(jumps[i] = jump_in(r, page, funcs[i])))
				page = 0;
	if (n && !page) {
		if (!(page = map_page(r, funcs, n, why, sizeof(why)))) {
			ht_info("python: PID %d: no page for the jumps (%s): the calls the build inlines are not seen",
				r->pid, why);
			n = 0;
		}
		for (int i = 0; i < n; i++)
			jumps[i] = page + JUMPS_OFF + i * JUMP_SIZE;
	}
	for (int i = 0; i < n; i++) {
		if (remote_write(r, slots[i], &jumps[i], sizeof(jumps[i]))) {
			ht_info("python: PID %d: the slot of %s cannot be redirected", r->pid, names[i]);
			continue;
		}
		pt->w[pt->n++] = (struct pyt_write){ r->pid, slots[i], funcs[i], jumps[i], 0 };
		done++;
	}
	free(maps);
	if (done)
		ht_info("python: PID %d: %d allocator table slots point at jumps to their own functions (page 0x%lx): "
			"the inlined copies are bypassed, every call is seen", r->pid, done, page);
	return done;
}

int pytables_point(struct pytables *pt, struct remote *r, uint64_t (*entry)(void *arg, uint64_t func), void *arg)
{
	int done = 0;

	for (int i = 0; i < pt->n; i++) {
		struct pyt_write *w = &pt->w[i];
		uint64_t to = w->pid == r->pid ? entry(arg, w->func) : 0, now;

		if (to && !remote_read(r, w->at, &now, sizeof(now)) && now == w->jump &&
		    !remote_write(r, w->at, &to, sizeof(to))) {
			w->direct = to;
			done++;
		}
	}
	if (done)
		ht_info("python: PID %d: %d allocator table slots point at their functions' fast entries", r->pid, done);
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
		if (!remote_read(r, w->at, &now, sizeof(now)) && (now == w->jump || (w->direct && now == w->direct)) &&
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
