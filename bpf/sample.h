/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --sample-rate R: the arithmetic of Poisson byte sampling, compiled by the
 * BPF programs and by user space (the unit test, --min-age recounts) alike,
 * so both sides compute exactly the same numbers.  Integers only: BPF has
 * no floating point.
 *
 * Each thread counts down a number of bytes drawn from an exponential
 * distribution of mean R; an allocation that the countdown does not cover
 * is sampled, and a new countdown is drawn.  Because the exponential is
 * memoryless, an allocation of s bytes is sampled with probability
 * p(s) = 1 - exp(-s/R) whatever came before it (as in tcmalloc and Go), and
 * weighing a sampled allocation by w(s) = 1/p(s) makes every counter an
 * unbiased estimate.
 */
#ifndef HT_SAMPLE_H
#define HT_SAMPLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * The largest --sample-rate: keeps rate x -ln(u) (Q24) and the weights'
 * intermediate products inside 64 bits.
 */
#define HT_MAX_SAMPLE_RATE (1ull << 30)

/* Weights are fixed point with 16 fractional bits: HT_WEIGHT_ONE is 1.0, an exact mode allocation. */
#define HT_WEIGHT_SHIFT 16
#define HT_WEIGHT_ONE (1ull << HT_WEIGHT_SHIFT)

#define HT_LN2_Q30 744261118ull         /* ln 2, Q30 */
#define HT_LOG2E_Q24 24204406ull        /* log2 e, Q24 */

/* log2(1 + i/64), Q24, i = 0..64. */
static const __u32 ht_log2_table[65] = {
	0, 375270, 744810, 1108793, 1467383, 1820738, 2169009, 2512340, 2850868, 3184728, 3514044,
	3838941, 4159533, 4475935, 4788255, 5096595, 5401057, 5701737, 5998727, 6292118, 6581994,
	6868440, 7151536, 7431359, 7707984, 7981483, 8251926, 8519380, 8783912, 9045584, 9304457,
	9560591, 9814042, 10064867, 10313120, 10558852, 10802114, 11042956, 11281425, 11517568,
	11751428, 11983051, 12212479, 12439752, 12664911, 12887994, 13109041, 13328087, 13545168,
	13760320, 13973576, 14184969, 14394532, 14602297, 14808293, 15012551, 15215099, 15415967,
	15615181, 15812769, 16008758, 16203172, 16396036, 16587377, 16777216,
};

/* 2^(-i/64), Q30, i = 0..64. */
static const __u32 ht_exp2_table[65] = {
	1073741824, 1062175491, 1050733751, 1039415261, 1028218693, 1017142735, 1006186087,
	995347464, 984625594, 974019220, 963527098, 953147997, 942880699, 932724001, 922676710,
	912737649, 902905651, 893179563, 883558244, 874040567, 864625413, 855311680, 846098274,
	836984114, 827968132, 819049271, 810226483, 801498734, 792865000, 784324269, 775875538,
	767517817, 759250125, 751071493, 742980960, 734977579, 727060411, 719228525, 711481005,
	703816941, 696235434, 688735596, 681316545, 673977412, 666717336, 659535466, 652430958,
	645402981, 638450708, 631573326, 624770026, 618040012, 611382493, 604796689, 598281827,
	591837143, 585461881, 579155293, 572916640, 566745190, 560640218, 554601009, 548626854,
	542717053, 536870912,
};

/* floor(log2(v)), v >= 1, by halving: BPF has no count-leading-zeros instruction. */
static inline __u32 ht_ilog2(__u64 v)
{
	__u32 e = 0;

	if (v >> 32) { v >>= 32; e += 32; }
	if (v >> 16) { v >>= 16; e += 16; }
	if (v >> 8) { v >>= 8; e += 8; }
	if (v >> 4) { v >>= 4; e += 4; }
	if (v >> 2) { v >>= 2; e += 2; }
	if (v >> 1) { e += 1; }
	return e;
}

/*
 * -ln(x) for x = (u + 1) / 2^32, u uniform over 32 bits: an exponential
 * variate of mean 1, in Q24.  -ln(x) = ln 2 (32 - log2(u + 1)); log2 is the
 * exponent (ht_ilog2) plus log2 of the mantissa, taken from a 64-entry
 * table with linear interpolation.  log2 is concave, so the interpolation
 * lies below it and the result is never too small; its largest error is
 * ln 2 x h^2/8 x max|log2''| = (1/64)^2/8 = 3.05e-5 (absolute, in units of
 * the mean), plus 6e-8 of Q24 rounding: a countdown is at most 3.1e-5 R
 * long (16 bytes at R = 512 KiB), and the mean interval is long by less
 * than 0.0031%.  u + 1 <= 2^32 cuts the distribution's tail at 22.2 R,
 * which a draw reaches with probability 2^-32.  tests/unit/test_sample.c
 * checks both bounds against libm.
 */
static inline __u64 ht_neg_ln_q24(__u32 u)
{
	__u64 v = (__u64)u + 1;                 /* 1 .. 2^32 */
	__u32 e = ht_ilog2(v);                  /* 0 .. 32 */
	__u64 m = v << (63 - e);                /* the leading one at bit 63 */
	__u32 i = (m >> 57) & 63;               /* the next 6 bits pick the table interval */
	__u64 t = (m >> 33) & 0xffffff;         /* the next 24: where in it, Q24 */
	__u64 lo = ht_log2_table[i], hi = ht_log2_table[i + 1];
	__u64 frac = lo + (((hi - lo) * t) >> 24);              /* log2 of the mantissa, Q24 */
	__u64 l2 = ((__u64)(32 - e) << 24) - frac;              /* -log2(x), Q24, >= 0 */

	return (l2 * HT_LN2_Q30) >> 30;
}

/* A thread's next countdown, in bytes: exponential with mean rate (rate <= HT_MAX_SAMPLE_RATE). */
static inline __u64 ht_sample_interval(__u64 rate, __u32 u)
{
	return (rate * ht_neg_ln_q24(u)) >> 24;
}

/*
 * One allocation of size bytes against a countdown: 0 when the countdown
 * covers it (and is that much shorter), 1 when the allocation is sampled;
 * the caller then draws the next countdown.  With the countdown
 * floor(R E), E exponential, floor(R E) < s exactly when R E < s: an
 * allocation of s bytes is sampled with probability 1 - exp(-s/R), and
 * what is left of a countdown that covered it is again floor(R E').
 * Zero-byte allocations are never sampled.
 */
static inline int ht_countdown(__u64 *until, __u64 size)
{
	if (size <= *until) {
		*until -= size;
		return 0;
	}
	return 1;
}

/*
 * The weight of a sampled allocation of size bytes, 1 / (1 - exp(-size/rate)),
 * Q16.  Two forms keep it accurate everywhere:
 *  - y = size/rate < 1/4: (rate/size) x B(y), B(y) = y / (1 - e^-y) =
 *    1 + y/2 + y^2/12 - y^4/720 (truncation error < y^6/30240 < 1e-8): no
 *    cancellation in 1 - e^-y, however small y is;
 *  - otherwise 1 / (1 - e^-y) with e^-y = 2^(-y log2 e) from a 64-entry
 *    table of 2^(-i/64) with linear interpolation, whose error (at most
 *    1.5e-5, since 1 - e^-y >= 0.22 at most 6.6e-5 relative to the weight)
 *    dominates: weights are within 1e-4 of the exact value
 *    (tests/unit/test_sample.c).
 * Sizes from 24 x rate up weigh exactly 1: e^-24 is below Q16's resolution.
 * A size of 0 is never sampled; it weighs 1 too.
 */
static inline __u64 ht_weight_q16(__u64 size, __u64 rate)
{
	if (!rate || !size || size >= 24 * rate)
		return HT_WEIGHT_ONE;

	__u64 y = (size << 24) / rate;          /* size/rate, Q24: < 24 << 24 */

	if (y < (1ull << 22)) {
		__u64 y2 = (y * y) >> 24;
		__u64 b1 = y / 2 + y2 / 12 - ((y2 * y2) >> 24) / 720;  /* B(y) - 1, Q24 */
		__u64 q = (rate << HT_WEIGHT_SHIFT) / size;            /* rate/size, Q16 */

		/* q x b1 stays below 2^40: q ~ 2^16 rate/size, b1 ~ 2^23 size/rate. */
		return q + ((q * b1) >> 24);
	}
	__u64 z = (y * HT_LOG2E_Q24) >> 24;     /* -log2(e^-y), Q24: < 35 << 24 */
	__u32 k = z >> 24, i = (z >> 18) & 63;
	__u64 t = z & 0x3ffff;                  /* within the table interval, Q18 */
	__u64 lo = ht_exp2_table[i], hi = ht_exp2_table[i + 1];
	__u64 e = (lo - (((lo - hi) * t) >> 18)) >> k;                /* e^-y, Q30 */

	return (1ull << (30 + HT_WEIGHT_SHIFT)) / ((1ull << 30) - e);
}

/* What a sampled block of size bytes adds to the byte estimates; exact for weight 1. */
static inline __u64 ht_weighted_bytes(__u64 size, __u64 weight)
{
	return weight == HT_WEIGHT_ONE ? size : (size * weight) >> HT_WEIGHT_SHIFT;
}

/* A Q16 count rounded to the nearest whole one (user space: BPF keeps Q16). */
static inline __s64 ht_q16_round(__s64 v)
{
	return v >= 0 ? (v + (1 << (HT_WEIGHT_SHIFT - 1))) >> HT_WEIGHT_SHIFT :
			-((-v + (1 << (HT_WEIGHT_SHIFT - 1))) >> HT_WEIGHT_SHIFT);
}

#endif /* HT_SAMPLE_H */
