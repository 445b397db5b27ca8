// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An allocator's request as its spec says where to find it.  One program
 * serves every allocator entry point: what differs between malloc, calloc,
 * posix_memalign, realloc or an arena allocator (which arguments hold the
 * size, the pointer, the arena) is data in an ht_alloc_spec, chosen by the
 * attach cookie and evaluated here, so no probe names an allocator.
 */
#ifndef HT_REQUEST_BPF_H
#define HT_REQUEST_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "heaptrace.h"
#include "config.bpf.h"
#include "counters.bpf.h"

/* libbpf 1.1 stops at the fifth argument register. */
#if !defined(PT_REGS_PARM6) && defined(__TARGET_ARCH_x86)
#define PT_REGS_PARM6(x) (((const struct pt_regs *)(x))->r9)
#endif

/*
 * Arguments 1-6 by number, slot 0 and 7 zero so any 3-bit index is valid;
 * slots 8-11 the spec's reads of target memory (read_mems()).
 */
static __always_inline void save_args(struct pt_regs *ctx, __u64 *a)
{
	a[8] = a[9] = a[10] = a[11] = 0;
	a[0] = 0;
	a[1] = PT_REGS_PARM1(ctx);
	a[2] = PT_REGS_PARM2(ctx);
	a[3] = PT_REGS_PARM3(ctx);
	a[4] = PT_REGS_PARM4(ctx);
	a[5] = PT_REGS_PARM5(ctx);
	a[6] = PT_REGS_PARM6(ctx);
	a[7] = 0;
}

/*
 * The spec's reads of target memory at an entry (args saved): *(argN +
 * offset), or a global, whose address moves with its object's load bias:
 * the probe's address in the process (func_ip, the uprobe's address) less
 * its ELF address.  A read that faults gives 0, counted.
 */
static __always_inline void read_mems(const volatile struct ht_alloc_spec *s, __u64 *args, __u64 func_ip, __u32 proc)
{
	__u64 bias = func_ip - s->probe_vaddr;

	for (int k = 0; k < HT_MAX_MEM; k++) {
		if (k >= s->n_mem)
			break;
		__u8 base = s->mem[k].base;
		__u64 v = 0, at = (base ? args[base & 7] : bias) + s->mem[k].offset;
		if (bpf_probe_read_user(&v, sizeof(v), (void *)at)) {
			v = 0;
			count(proc, HT_SPEC_READ_FAULTS);
		}
		args[8 + k] = v;
	}
}

/* *(ret + offset) at the return; 0 when it faults. */
static __always_inline __u64 read_at_return(__u64 at)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)at))
		return 0;
	return v;
}

/* The saved arguments as one object, so that a global function can take them. */
struct ht_argv {
	__u64 v[HT_ARG_SLOTS];
};

/*
 * A spec's sum of products, over saved arguments and the return value.
 * A global function (HT_CHECKED_ONCE): the verifier checks it once, not at
 * each of the seven places that evaluate an expression, in each program
 * (its nested loops over terms and factors were half of all it walked, and
 * most of the start-up's load time).  So its pointers may be NULL to it.
 */
HT_CHECKED_ONCE __u64 ht_eval(const struct ht_expr *e, const struct ht_argv *a, __u64 ret)
{
	__u64 sum = 0;

	if (!e || !a)
		return 0;
	for (int i = 0; i < HT_EXPR_TERMS; i++) {
		if (i >= e->n)
			break;
		__u64 prod = 1;
		for (int j = 0; j < HT_EXPR_FACTORS; j++) {
			const struct ht_factor *f = &e->t[i].f[j];

			if (j >= e->t[i].n)
				break;
			prod *= f->kind == HT_FACTOR_CONST   ? f->value :
				f->kind == HT_FACTOR_RET     ? ret :
				f->kind == HT_FACTOR_MEM     ? a->v[8 + (f->value & 3)] :
				f->kind == HT_FACTOR_MEM_RET ? read_at_return(ret + f->value) :
							       a->v[f->value & 7];
		}
		sum += prod;
	}
	return sum;
}

#define eval(e, args, ret) ht_eval((const struct ht_expr *)(e), (const struct ht_argv *)(args), (ret))

/* The request's size in bytes, as the allocator rounds it (pvalloc). */
static __always_inline __u64 request_size(const volatile struct ht_alloc_spec *spec, const __u64 *args, __u64 ret)
{
	__u64 size = eval(&spec->size, args, ret);

	return spec->page_round ? (size + page_size - 1) & ~(page_size - 1) : size;
}

#endif /* HT_REQUEST_BPF_H */
