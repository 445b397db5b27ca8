// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The user stack of an allocation, interned: captured by the walk that
 * --unwind chose, hashed, stored once in the stacks map and named by its
 * hash from then on.  Every recorded allocation pays for this; it is apart
 * from the accounting, which only ever sees the hash.
 */
#ifndef HT_STACK_BPF_H
#define HT_STACK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "heaptrace.h"
#include "config.bpf.h"
#include "counters.bpf.h"
#include "scratch.bpf.h"
#include "unwind.bpf.h"

/*
 * Frames, written once per new stack: allocated as used, not preallocated.
 * Values are a prefix of struct ht_stack, sized by the loader to
 * --max-depth (entries: --max-stacks), so the map carries no BTF value
 * type to disagree with.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, HT_DEFAULT_MAX_STACKS);
	__uint(key_size, sizeof(__u64));        /* stack hash */
	__uint(value_size, sizeof(struct ht_stack));
} stacks SEC(".maps");

/*
 * One frame of walk_stack, frame i + 1 (frame 0 is the return address);
 * 1 to stop.  The frame's index is the loop's, not a count kept in w: the
 * verifier then has no constant to track through the iterations and checks
 * the callback once or twice, not once per frame.
 */
static long fp_step(__u32 i, void *unused)
{
	struct scratch *sc = scratch_here();
	struct fp_walk *w = sc ? &sc->fw : NULL;
	__u64 frame[2];
	__u32 n = i + 1;

	if (!w)
		return 1;
	__u64 fp = w->fp, off = fp - w->sp;
	/*
	 * Below vm.mmap_min_addr nothing can be mapped: the read would fault
	 * and end the walk, as it does the kernel's, but a fault costs ~1 us.
	 * The outermost frame of glibc's main thread (fp = 1) and of its
	 * threads (fp = 0) end here.  Past a signal frame the interrupted pc
	 * comes first, whatever its rbp.
	 */
	if (!w->interrupted && fp < min_frame_addr)
		return 1;
	if (n >= max_depth || n >= HT_MAX_STACK_DEPTH) {
		w->flags = HT_STACK_MAX_DEPTH;
		return 1;
	}
	if (w->interrupted) {
		sc->st.pcs[n] = w->interrupted;
		w->hash = ht_stack_hash_step(w->hash, w->interrupted);
		w->interrupted = 0;
		w->n = n + 1;
		return 0;
	}
	if (fp >= w->sp && off + 16 <= w->copied && !(off & 7)) {
		__u32 k = (off >> 3) & (HT_STACK_COPY_BYTES / 8 - 2);
		frame[0] = sc->copy[k];
		frame[1] = sc->copy[k + 1];
	} else if (bpf_probe_read_user(frame, sizeof(frame), (void *)fp)) {
		return 1;
	}
	if (!frame[1])
		return 1;
	sc->st.pcs[n] = frame[1];
	w->hash = ht_stack_hash_step(w->hash, frame[1]);
	w->n = n + 1;
	w->fp = frame[0];
	if (w->restorer && frame[1] == w->restorer) {
		struct sigframe_regs g;

		/* The handler's frame is at fp: its return address at fp + 8, the ucontext right above. */
		if (read_sigframe(fp + 16, &g) || !g.rip) {
			w->flags = HT_STACK_TRUNCATED;
			return 1;
		}
		w->interrupted = HT_SIGFRAME_PC(g.rip);
		w->fp = g.rbp;
	}
	return 0;
}

/*
 * The user stack at a return probe, innermost first: frame 0 is the return
 * address in the allocator's caller, then a frame-pointer walk.  The walk
 * reads frames from one bulk copy of the stack above the stack pointer (one
 * probe_read instead of two per frame) and reads a frame directly only when
 * it lies beyond the copy.  It stops where the kernel's own walk stops: at
 * an unreadable frame or max_depth; and at a zero return address, where
 * the stack map's readers stop too.  Unlike the kernel's walk, it goes on
 * through a signal frame (sigframe.bpf.h): a return address that is the
 * thread's restorer is followed by the interrupted instruction, and the
 * walk continues from the interrupted rbp.  A bpf_loop callback, so that
 * the verifier checks one frame, not each of 127.
 */
static __always_inline __u32 walk_stack(__u64 ip, __u64 sp, __u64 fp, struct scratch *sc, __u64 *hash)
{
	struct fp_walk *w = &sc->fw;

	*w = (struct fp_walk){ .sp = sp, .fp = fp, .restorer = current_restorer(), .n = 1,
			       .hash = ht_stack_hash_step(HT_STACK_HASH_SEED, ip) };
	w->copied = copy_stack(sc, w->sp);
	sc->st.pcs[0] = ip;
	bpf_loop(HT_MAX_STACK_DEPTH, fp_step, NULL, 0);
	sc->st.flags = w->flags;
	*hash = ht_stack_hash_end(w->hash);
	return w->n;
}

static __always_inline __u32 kernel_stack(struct pt_regs *ctx, struct scratch *sc)
{
	long bytes = bpf_get_stack(ctx, sc->st.pcs, (max_depth & 127) * sizeof(__u64), BPF_F_USER_STACK);
	__u32 n = 0;

	if (bytes <= 0)
		return 0;
	for (int i = 0; i < HT_MAX_STACK_DEPTH; i++) {
		if (i >= bytes / 8 || !sc->st.pcs[i])
			break;
		n = i + 1;
	}
	return n;
}

/* FNV-1a over the frames (heaptrace.h: the stub hashes its stacks alike), 0 kept free for HT_STACK_LOST. */
static __always_inline __u64 hash_stack(const struct ht_stack *st)
{
	__u64 h = HT_STACK_HASH_SEED;

	for (int i = 0; i < HT_MAX_STACK_DEPTH; i++) {
		if (i >= st->depth)
			break;
		h = ht_stack_hash_step(h, st->pcs[i]);
	}
	return ht_stack_hash_end(h);
}

/*
 * sc->st into the stacks map under hash h, once: h, or HT_STACK_LOST with
 * the loss's counter in *loss (a collision, or the map full).  addr: where
 * the frames after the first are in user memory (a stack the stub
 * walked, read only when it is new); 0: all in sc->st.
 */
static __always_inline __u64 intern_stack(struct scratch *sc, __u64 h, __u64 addr, __u32 *loss)
{
	struct ht_stack *known = bpf_map_lookup_elem(&stacks, &h);
	if (known) {
		/* A cheap check that catches all but astronomically unlucky collisions. */
		if (known->depth != sc->st.depth || known->pcs[0] != sc->st.pcs[0]) {
			*loss = HT_STACK_COLLISIONS;
			return HT_STACK_LOST;
		}
		return h;
	}
	__u32 n = sc->st.depth & 127;
	if (addr && (n != sc->st.depth || bpf_probe_read_user(sc->st.pcs, n * sizeof(__u64), (void *)addr))) {
		*loss = HT_STACK_ERRORS;
		return HT_STACK_LOST;
	}
	if (bpf_map_update_elem(&stacks, &h, &sc->st, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&stacks, &h)) {
		*loss = HT_STACK_ERRORS;
		return HT_STACK_LOST;
	}
	return h;
}

/*
 * Store (once) the stack in sc->st, of proc, whose hash is h; its hash, or
 * HT_STACK_LOST.  A stack the stub walked comes with its hash and only its
 * first frame (sc->preset_addr: where the rest is), read only when the
 * stack is new.  Our own walks hash the frames as they go: a loop over
 * them here was 3,400 of the instructions the verifier walked in each
 * allocation program (a bounded loop of 127 is walked 127 times).
 */
static __always_inline __u64 store_hashed(struct scratch *sc, __u32 proc, __u64 h)
{
	if (!sc->st.depth) {
		count(proc, HT_STACK_ERRORS);
		return HT_STACK_LOST;
	}
	if (sc->st.flags & HT_STACK_TRUNCATED)
		count(proc, HT_STACKS_TRUNCATED);
	if (sc->st.flags & HT_STACK_MAX_DEPTH)
		count(proc, HT_STACKS_AT_MAX_DEPTH);

	__u64 addr = sc->preset_addr;
	__u32 loss = 0;
	sc->preset_addr = 0;
	h = intern_stack(sc, h, addr, &loss);
	if (loss)
		count(proc, loss);
	return h;
}

/* store_hashed, the frames in sc->st hashed here (the kernel's walk, or frames changed after a walk). */
static __always_inline __u64 store_stack(struct scratch *sc, __u32 proc)
{
	return store_hashed(sc, proc, sc->preset_addr ? sc->preset_hash : hash_stack(&sc->st));
}

/*
 * Our own walk from ip, sp and fp (frame pointers, or CFI with
 * --unwind dwarf); proc_spec: the process slot << 32 | the spec.  A global
 * function: the verifier checks the walk once, not once for every path of
 * the allocation programs that reaches it (five arguments at most: hence
 * proc_spec).
 */
__noinline __u64 capture_walk(__u64 ip, __u64 sp, __u64 fp, __u64 proc_spec, __u64 func_ip)
{
	__u32 proc = proc_spec >> 32, spec = (__u32)proc_spec;
	struct scratch *sc = scratch_here();

	if (!sc)
		return HT_STACK_LOST;
	/* The stub's stack: its hash and where its frames are (stub_stack() sets preset_addr with preset). */
	if (sc->preset) {
		sc->preset = 0;
		return store_hashed(sc, proc, sc->preset_hash);
	}
	__u64 h = 0;
	sc->st.flags = 0;
	sc->st.depth = stack_mode == HT_STACK_DWARF ? dwarf_stack(ip, sp, fp, sc, proc, spec, func_ip, &h) :
						       walk_stack(ip, sp, fp, sc, &h);
	return store_hashed(sc, proc, h);
}

/*
 * Capture, hash and store (once) the current stack; its hash, or
 * HT_STACK_LOST.  regs are the registers to walk from: the probe's own
 * (ctx), or those the stub recorded at an allocator's entry (a copy, so the
 * kernel's walk, which needs the real ctx, is not offered for those).
 * func_ip: the probed function's address for the CFI walk's object lookup,
 * 0 if unknown.
 */
static __always_inline __u64 capture_stack(struct pt_regs *ctx, struct pt_regs *regs, __u32 proc, __u32 spec,
					   __u64 func_ip)
{
	if (stack_mode != HT_STACK_KERNEL)
		return capture_walk(PT_REGS_IP(regs), PT_REGS_SP(regs), PT_REGS_FP(regs),
				    (__u64)proc << 32 | spec, func_ip);

	struct scratch *sc = scratch_here();

	if (!sc)
		return HT_STACK_LOST;
	sc->st.flags = 0;
	sc->st.depth = kernel_stack(ctx, sc);
	return store_stack(sc, proc);
}

#endif /* HT_STACK_BPF_H */
