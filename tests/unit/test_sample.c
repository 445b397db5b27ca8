/*
 * Unit test for bpf/sample.h, the sampling arithmetic the BPF programs run
 * (compiled here from the same header): the -ln(u) approximation and the
 * weights against libm, and the whole sampler (countdown, draws, weights)
 * on a simulated allocation stream, with a fixed seed so the numbers are
 * the same every run.
 *
 * cc -O2 -Ibpf tests/unit/test_sample.c -o build/unit/test_sample -lm
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sample.h"
#include "stub.h"

#include "check.h"

static double neg_ln(uint32_t u)
{
	return -log(((double)u + 1) / 4294967296.0);
}

/*
 * The approximation against libm: every u in the first and last 2^20 (the
 * tail of the distribution and values near 0), and every 97th in between
 * (97 is odd, so every low-bit pattern of the mantissa is met).
 */
static void test_neg_ln(void)
{
	double worst = 0, below = 0, sum_approx = 0, sum_exact = 0;
	uint32_t worst_u = 0;
	uint64_t n = 0;

	for (uint64_t u = 0; u <= UINT32_MAX; u += u < (1u << 20) || u > UINT32_MAX - (1u << 20) ? 1 : 97) {
		double exact = neg_ln(u), approx = ht_neg_ln_q24(u) / 16777216.0, d = approx - exact;
		if (fabs(d) > worst) {
			worst = fabs(d);
			worst_u = u;
		}
		if (-d > below)
			below = -d;
	}
	/* The mean over a uniform grid of u: the mean countdown, in units of R. */
	for (uint64_t u = 0; u <= UINT32_MAX; u += 97, n++) {
		sum_approx += ht_neg_ln_q24(u) / 16777216.0;
		sum_exact += neg_ln(u);
	}
	check(worst <= 3.1e-5, "-ln(u): largest absolute error %.3g (at u = %u) <= 3.1e-5 (documented bound)",
	      worst, worst_u);
	check(below <= 1e-7, "-ln(u): never below the exact value by more than Q24 rounding (%.3g <= 1e-7)", below);
	check(fabs(sum_approx / n - sum_exact / n) <= 3.1e-5,
	      "-ln(u): the mean over %lu draws is off by %.3g <= 3.1e-5 (of a mean of %.6f)", (unsigned long)n,
	      sum_approx / n - sum_exact / n, sum_exact / n);
	check(ht_neg_ln_q24(UINT32_MAX) == 0, "-ln(1) = 0");
	check(fabs(ht_neg_ln_q24(0) / 16777216.0 - 32 * log(2)) < 1e-6, "-ln(2^-32) = 32 ln 2 = %.6f",
	      ht_neg_ln_q24(0) / 16777216.0);
	check(ht_sample_interval(HT_MAX_SAMPLE_RATE, 0) / (double)HT_MAX_SAMPLE_RATE > 22.18,
	      "the longest countdown at the largest rate does not overflow (%.3f x R)",
	      ht_sample_interval(HT_MAX_SAMPLE_RATE, 0) / (double)HT_MAX_SAMPLE_RATE);
}

static void test_weights(void)
{
	static const uint64_t rates[] = { 1, 100, 4096, 65536, 524288, 1000000, HT_MAX_SAMPLE_RATE };
	double worst = 0;
	uint64_t worst_s = 0, worst_r = 0;
	bool ones = true, bytes_ok = true;

	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		uint64_t rate = rates[r];
		/* Sizes 1 .. 30 R, 4% apart, and each exactly: the switch at R/4 and 24 R. */
		for (double s = 1; s < 30.0 * rate; s = s * 1.04 + 1) {
			uint64_t sizes[] = { (uint64_t)s, rate / 4 - 1, rate / 4, rate / 4 + 1, 24 * rate - 1 };
			for (size_t k = 0; k < 5; k++) {
				uint64_t size = sizes[k];
				if (!size)
					continue;
				double exact = 1 / -expm1(-(double)size / rate);
				double w = ht_weight_q16(size, rate) / (double)HT_WEIGHT_ONE;
				double rel = fabs(w - exact) / exact;
				if (rel > worst) {
					worst = rel;
					worst_s = size;
					worst_r = rate;
				}
				/* What one block adds to the byte estimates: w x size, to a byte. */
				double b = ht_weighted_bytes(size, ht_weight_q16(size, rate));
				if (fabs(b - w * size) > 1 + 1e-12 * w * size)
					bytes_ok = false;
			}
		}
		ones &= ht_weight_q16(24 * rate, rate) == HT_WEIGHT_ONE &&
			ht_weight_q16(1000 * rate, rate) == HT_WEIGHT_ONE;
	}
	check(worst <= 1e-4, "weights: largest relative error %.3g (size %lu, rate %lu) <= 1e-4 (documented bound)",
	      worst, (unsigned long)worst_s, (unsigned long)worst_r);
	check(ones, "weights: sizes from 24 x rate up weigh exactly 1");
	check(ht_weight_q16(123, 0) == HT_WEIGHT_ONE && ht_weight_q16(0, 65536) == HT_WEIGHT_ONE,
	      "weights: exact mode (rate 0) and zero sizes weigh exactly 1");
	check(ht_weighted_bytes(123456789, HT_WEIGHT_ONE) == 123456789, "weights: weight 1 adds the size exactly");
	check(bytes_ok, "weights: a block adds weight x size bytes, to a byte");
}

/* xorshift64*: a fixed, portable stream for the simulation. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_u32(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (rng * 0x2545f4914f6cdd1dull) >> 32;
}

/* The BPF side's sample(): the countdown, redrawn after each sampled allocation. */
struct sampler {
	__u64 rate, until;
};

static bool sampled(struct sampler *s, uint64_t size)
{
	if (!ht_countdown(&s->until, size))
		return false;
	s->until = ht_sample_interval(s->rate, next_u32());
	return true;
}

/*
 * Allocations of one size s: the fraction sampled must be 1 - exp(-s/R).
 * n draws: a binomial with sd sqrt(p(1-p)/n); 5 sd allowed.
 */
static void test_probability(uint64_t rate, uint64_t size, uint64_t n)
{
	struct sampler sm = { .rate = rate, .until = ht_sample_interval(rate, next_u32()) };
	uint64_t k = 0;

	for (uint64_t i = 0; i < n; i++)
		k += sampled(&sm, size);
	double p = -expm1(-(double)size / rate), got = (double)k / n, sd = sqrt(p * (1 - p) / n);
	check(fabs(got - p) <= 5 * sd, "sampler: size %lu at rate %lu sampled %.5f of %lu times, want %.5f +- %.5f",
	      (unsigned long)size, (unsigned long)rate, got, (unsigned long)n, p, 5 * sd);
}

/*
 * A stream of mixed sizes, the weights of the sampled ones summed: the
 * estimates of bytes and of allocations must come within 5 standard
 * deviations of the truth, the deviations computed from the stream
 * (var = sum (1 - p) / p x s^2 for bytes, sum (1 - p) / p for counts).
 */
static void test_estimates(void)
{
	const uint64_t rate = 65536, n = 4000000;
	struct sampler sm = { .rate = rate, .until = ht_sample_interval(rate, next_u32()) };
	double bytes = 0, est_bytes = 0, est_count = 0, var_bytes = 0, var_count = 0, want = 0, var_samples = 0;
	uint64_t samples = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint32_t r = next_u32();
		/* Mostly small, some page-sized, a few bigger than R. */
		uint64_t size = r % 100 < 80 ? 16 + r % 1024 : r % 100 < 98 ? 4096 + r % 8192 : 100000 + r % 300000;
		double p = -expm1(-(double)size / rate);

		bytes += size;
		var_bytes += (1 - p) / p * size * size;
		var_count += (1 - p) / p;
		want += p;
		var_samples += p * (1 - p);
		if (sampled(&sm, size)) {
			uint64_t w = ht_weight_q16(size, rate);
			samples++;
			est_bytes += ht_weighted_bytes(size, w);
			est_count += (double)w / HT_WEIGHT_ONE;
		}
	}
	check(fabs(est_bytes - bytes) <= 5 * sqrt(var_bytes),
	      "estimates: %lu samples of %lu allocations: bytes %.0f, true %.0f (%+.2f%%, 5 sd = %.2f%%)",
	      (unsigned long)samples, (unsigned long)n, est_bytes, bytes, 100 * (est_bytes / bytes - 1),
	      500 * sqrt(var_bytes) / bytes);
	check(fabs(est_count - n) <= 5 * sqrt(var_count),
	      "estimates: allocations %.0f, true %lu (%+.2f%%, 5 sd = %.2f%%)", est_count, (unsigned long)n,
	      100 * (est_count / n - 1), 500 * sqrt(var_count) / n);
	check(fabs(samples - want) <= 5 * sqrt(var_samples),
	      "estimates: %lu samples, want %.0f +- %.0f (the sum of 1 - exp(-size/R))", (unsigned long)samples, want,
	      5 * sqrt(var_samples));
}

/*
 * The stub's granule (stub/stub.h): log2(rate / 64), 4 to 12; on a
 * stream of blocks laid end to end (a bump allocator's), a granule holds
 * a sampled block once in 64 or less, so that the frees of its other
 * blocks pass the filter.
 */
static void test_granule(void)
{
	static const uint64_t rate[] = { 1, 1000, 1024, 4096, 65536, 524288, 1ull << 30 };
	static const uint32_t want[] = { 4, 4, 4, 6, 10, 12, 12 };

	for (unsigned i = 0; i < sizeof(rate) / sizeof(rate[0]); i++)
		check(stub_granule_shift(rate[i]) == want[i], "granule: rate %lu: shift %u, want %u",
		      (unsigned long)rate[i], stub_granule_shift(rate[i]), want[i]);
	for (uint64_t r = 4096; r <= 524288; r *= 8) {
		struct sampler sm = { .rate = r, .until = ht_sample_interval(r, next_u32()) };
		uint32_t shift = stub_granule_shift(r);
		uint64_t at = 0, granules = 0, marked = 0, last = UINT64_MAX;
		for (int k = 0; k < 2000000; k++) {
			uint32_t u = next_u32();
			uint64_t size = u % 100 < 90 ? 16 + u % 240 : 1024 + u % 8192;
			if (sampled(&sm, size) && at >> shift != last) {
				marked++;
				last = at >> shift;
			}
			at += size;
		}
		granules = at >> shift;
		check(marked * 64 <= granules * 1.1, "granule: rate %lu: %lu of %lu granules hold a sampled block",
		      (unsigned long)r, (unsigned long)marked, (unsigned long)granules);
	}
}

int main(void)
{
	test_neg_ln();
	test_weights();
	test_probability(65536, 65536 / 2, 1000000);
	test_probability(65536, 64, 4000000);
	test_probability(524288, 3 * 524288, 200000);
	test_probability(4096, 1, 4000000);
	test_estimates();
	test_granule();
	return check_summary();
}
