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

/* libbpf 1.1 stops at the fifth argument register. */
#if !defined(PT_REGS_PARM6) && defined(__TARGET_ARCH_x86)
#define PT_REGS_PARM6(x) (((const struct pt_regs *)(x))->r9)
#endif

/* Arguments 1-6 by number, slot 0 and 7 zero so any 3-bit index is valid. */
static __always_inline void save_args(struct pt_regs *ctx, __u64 *a)
{
	a[0] = 0;
	a[1] = PT_REGS_PARM1(ctx);
	a[2] = PT_REGS_PARM2(ctx);
	a[3] = PT_REGS_PARM3(ctx);
	a[4] = PT_REGS_PARM4(ctx);
	a[5] = PT_REGS_PARM5(ctx);
	a[6] = PT_REGS_PARM6(ctx);
	a[7] = 0;
}

/* A spec's sum of products, over saved arguments and the return value. */
static __always_inline __u64 eval(const volatile struct ht_expr *e, const __u64 *args, __u64 ret)
{
	__u64 sum = 0;

	for (int i = 0; i < HT_EXPR_TERMS; i++) {
		if (i >= e->n)
			break;
		__u64 prod = 1;
		for (int j = 0; j < HT_EXPR_FACTORS; j++) {
			const volatile struct ht_factor *f = &e->t[i].f[j];

			if (j >= e->t[i].n)
				break;
			prod *= f->kind == HT_FACTOR_CONST ? f->value :
				f->kind == HT_FACTOR_RET   ? ret :
							     args[f->value & 7];
		}
		sum += prod;
	}
	return sum;
}

/* The request's size in bytes, as the allocator rounds it (pvalloc). */
static __always_inline __u64 request_size(const volatile struct ht_alloc_spec *spec, const __u64 *args, __u64 ret)
{
	__u64 size = eval(&spec->size, args, ret);

	return spec->page_round ? (size + page_size - 1) & ~(page_size - 1) : size;
}

#endif /* HT_REQUEST_BPF_H */
