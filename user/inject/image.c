/*
 * The stub's file, as heaptrace writes it before mapping it (image.h):
 * the blob, each function's trampolines (entry_i, orig_i), the
 * configuration the stub reads, and sampled mode's fast entries.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inject/fast.h"
#include "inject/image.h"
#include "inject/jumps.h"
#include "inject/pytables.h"
#include "inject/spec_stub.h"
#include "insn/relocate.h"
#include "probe/plan.h"
#include "stub_blob.h"

_Static_assert(sizeof(stub_blob) <= STUB_TRAMP_OFF, "the stub blob overlaps its trampolines");
_Static_assert(STUB_TRAMP_OFF + STUB_MAX_FNS * STUB_TRAMP_SIZE <= STUB_CFG_OFF, "trampolines overlap the config");
_Static_assert(STUB_CFG_OFF + sizeof(struct stub_cfg) <= STUB_FILE_SIZE, "the config does not fit the file");

/* The entry function i's entry_i goes on to: allocators', or frees'. */
static uint64_t fast_handler(const struct inject *in, const struct probe_plan *plan, int i)
{
	const struct probe *p = &plan->probes[in->fns[i].probe];
	/* A wrapping free is called, as an allocator is (STUB_FN_WRAPS). */
	bool called = p->kind == HT_SPEC_ALLOC || (p->kind == HT_SPEC_FREE && plan->specs[p->spec].free_wraps);

	return in->base + (called ? STUB_ENTRY_ALLOC : STUB_ENTRY_FREE);
}

int image_build(struct inject *in, const struct probe_plan *plan, uint8_t *img, char *why, size_t len)
{
	struct stub_cfg *cfg = (struct stub_cfg *)(img + STUB_CFG_OFF);

	memset(img, 0, STUB_FILE_SIZE);
	memcpy(img, stub_blob, sizeof(stub_blob));
	cfg->n_fns = in->n;
	cfg->page_size = sysconf(_SC_PAGESIZE);
	cfg->sample_rate = in->sample_rate;
	cfg->set_shift = 64 - __builtin_ctzll(in->buckets);
	cfg->granule_shift = stub_granule_shift(in->sample_rate);
	cfg->walk = in->walk;
	cfg->max_depth = in->max_depth;
	cfg->min_frame_addr = in->min_frame_addr;
	cfg->py = in->py;
	for (int i = 0; i < in->n; i++) {
		struct inject_fn *f = &in->fns[i];
		const struct probe *p = &plan->probes[f->probe];
		uint64_t entry = in->base + STUB_TRAMP_OFF + i * STUB_TRAMP_SIZE, orig = entry + 16;
		uint64_t handler = fast_handler(in, plan, i);
		uint8_t *t = img + STUB_TRAMP_OFF + i * STUB_TRAMP_SIZE;
		int32_t rel = (int32_t)(handler - (entry + 11));
		size_t orig_len;

		/*
		 * [undo the first instruction, when the jump comes after it;]
		 * mov $i, %r11d; jmp handler.  orig_i runs the displaced code
		 * from the entry, that instruction again included.
		 */
		size_t u = p->stub_undo_len;
		_Static_assert(UNDO_MAX + 11 <= 16, "entry_i's room");
		memcpy(t, p->stub_undo, u);
		rel = (int32_t)(handler - (entry + u + 11));
		t[u] = 0x41, t[u + 1] = 0xbb;
		memcpy(t + u + 2, &(uint32_t){ i }, 4);
		t[u + 6] = 0xe9;
		memcpy(t + u + 7, &rel, 4);
		/* A far function's orig_i is on the page of jumps, relocated there (jumps_build()). */
		if (f->far)
			orig = jumps_slot(in, i) + 16;
		else if (relocate_prologue(f->saved, sizeof(f->saved), p->func_size, f->addr, orig, f->skip, t + 16,
					   &orig_len, why, len) != (int)f->len)
			return -1;
		else if (16 + orig_len > STUB_TRAMP_SIZE) {
			snprintf(why, len, "the displaced code of %s does not fit", p->func);
			return -1;
		}
		cfg->fns[i] = (struct stub_fn){ .orig = orig, .spec = p->spec, .s = plan->specs[p->spec],
						.func_ip = f->addr + p->delta };
		spec_stub_fill(&cfg->fns[i], p, &plan->specs[p->spec]);
	}
	/* The fast entries: the functions' first, so that a wrapper's knows whether its function has one. */
	for (int i = 0; i < in->n; i++) {
		in->fns[i].fast = false;
		in->fns[i].direct = 0;
	}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < in->n; i++) {
			struct inject_fn *f = &in->fns[i];
			const struct probe *p = &plan->probes[f->probe];
			bool fwd = cfg->fns[i].flags & STUB_FN_FORWARD;
			if (fwd != (pass == 1) || !fast_eligible(&cfg->fns[i], in->sample_rate))
				continue;
			struct fast_at at = { .base = in->base, .handler = fast_handler(in, plan, i), .bias = f->addr - p->func_vaddr,
					      .skip = f->skip, .displaced = f->len, .addr = f->addr, .func_size = p->func_size,
					      .granule = cfg->granule_shift };
			/* Its displaced code in the entry, where the function is within a rel32 jump's reach. */
			if (!f->far)
				at.code = f->saved, at.code_len = sizeof(f->saved);
			for (int k = 0; fwd && in->pyt && k < in->pyt->n; k++)
				if (in->pyt->w[k].pid == in->pid && in->pyt->w[k].at == p->fwd_slot + at.bias)
					at.jump = in->pyt->w[k].jump;
			for (int j = 0; fwd && p->fwd_impl && j < in->n; j++)
				if (in->fns[j].fast && in->fns[j].addr == p->fwd_impl + at.bias)
					at.impl_entry = in->fns[j].direct;
			f->fast = !fast_emit(img, i, &cfg->fns[i], p, &at);
			f->direct = f->fast ? fast_entry_at(in->base, i) + p->stub_undo_len : 0;
		}
	memcpy(img + STUB_FAST_HASH_K, &(uint64_t){ STUB_FILTER_MUL }, 8);
	memcpy(img + STUB_FAST_COUNTS, &(uint64_t){ in->base + STUB_DATA_OFF + offsetof(struct stub_data, count) }, 8);
	if (in->sample_rate && fast_exit_emit(img, in->base)) {
		snprintf(why, len, "the fast entries' exit does not fit");
		return -1;
	}
	return 0;
}

