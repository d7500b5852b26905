/* backend_test.c: tests of the backend module: the Philox generator against
 * Random123's answers, the input distributions, half/bfloat16 conversions,
 * poison patterns and the host backend's ops table (fill, poison, compare). */
#include <math.h>
#include <stdint.h>

#include <kforge/backend.h>

#include "harness.h"

/* ---- helpers ---- */

static const struct kf_backend_ops *host_open(void **ctx)
{
	const struct kf_backend_ops *ops = kf_backend_find("host");
	CHECK(ops);
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(ops->init(ctx, &err) == 0, "%s", err.msg);
	return ops;
}

static uint32_t f32_bits(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	return x;
}

static float f32_from_bits(uint32_t x)
{
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static int half_is_nan(uint16_t h)
{
	return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
}

static int bf16_is_nan(uint16_t b)
{
	return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu);
}

/* The value of a half's bits by the definition (IEEE 754 binary16). For
 * 0x7c00 this gives 65536, the next step after the largest half, which
 * is what rounding needs; callers handle inf and NaN themselves. */
static double half_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
	return h & 0x8000u ? -v : v;
}

/* The same for bfloat16 (8 exponent bits, 7 mantissa bits). */
static double bf16_value(uint16_t b)
{
	int e = (b >> 7) & 0xff, m = b & 0x7f;
	double v = e ? ldexp(128 + m, e - 134) : ldexp(m, -133);
	return b & 0x8000u ? -v : v;
}

/* Rounds a non-NaN float to half, nearest with ties to even, by searching
 * the ordered half values: an oracle independent of kf_float_to_half. */
static uint16_t ref_float_to_half(float f)
{
	uint16_t sign = f32_bits(f) >> 31 ? 0x8000u : 0;
	double a = fabs((double)f);
	if (a >= 65536.0)
		return sign | 0x7c00u;
	unsigned lo = 0, hi = 0x7c00u; /* value(lo) <= a < value(hi) */
	while (hi - lo > 1) {
		unsigned mid = (lo + hi) / 2;
		if (half_value((uint16_t)mid) <= a)
			lo = mid;
		else
			hi = mid;
	}
	double dlo = a - half_value((uint16_t)lo);
	double dhi = half_value((uint16_t)hi) - a;
	unsigned r = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1u) ? hi : lo;
	return (uint16_t)(sign | r);
}

static uint16_t ref_float_to_bf16(float f)
{
	uint32_t x = f32_bits(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
	uint16_t lo = (uint16_t)((x >> 16) & 0x7fffu), hi = lo + 1;
	double a = fabs((double)f);
	double dlo = a - bf16_value(lo), dhi = bf16_value(hi) - a;
	uint16_t r = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1u) ? hi : lo;
	return sign | r;
}

static uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Compares n doubles (stored as dt) with tol through the host backend. */
static struct kf_cmp compare_as(enum kf_dtype dt, const double *got,
				const double *want, int64_t n,
				struct kf_tolerance tol)
{
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	size_t bytes = kf_dtype_bytes(dt) * (size_t)(n ? n : 1);
	void *g = kf_xmalloc(bytes), *w = kf_xmalloc(bytes);
	for (int64_t i = 0; i < n; i++) {
		kf_store_from_double(g, dt, i, got[i]);
		kf_store_from_double(w, dt, i, want[i]);
	}
	struct kf_cmp c;
	struct kf_err err = KF_ERR_INIT;
	CHECK(ops->compare(ctx, g, w, dt, n, tol, &c, &err) == 0);
	free(g);
	free(w);
	ops->fini(ctx);
	return c;
}

static struct kf_cmp compare_raw(enum kf_dtype dt, const void *got,
				 const void *want, int64_t n,
				 struct kf_tolerance tol)
{
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	struct kf_cmp c;
	struct kf_err err = KF_ERR_INIT;
	CHECK(ops->compare(ctx, got, want, dt, n, tol, &c, &err) == 0);
	ops->fini(ctx);
	return c;
}

/* ---- Philox and the distributions ---- */

static void test_backend_philox_random123_vectors(void)
{
	/* Random123's kat_vectors for philox4x32_10. */
	static const struct {
		uint32_t ctr[4], key[2], out[4];
	} kat[] = {
	    {{0, 0, 0, 0},
	     {0, 0},
	     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
	    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
	     {0xffffffff, 0xffffffff},
	     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
	    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
	     {0xa4093822, 0x299f31d0},
	     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	};
	for (size_t i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		uint32_t out[4];
		kf_philox4x32(kat[i].ctr, kat[i].key, out);
		for (int j = 0; j < 4; j++)
			CHECK_MSG(out[j] == kat[i].out[j],
				  "vector %zu word %d: %08x, want %08x", i, j,
				  out[j], kat[i].out[j]);
	}
}

static void test_backend_rng_is_deterministic(void)
{
	struct kf_fill f = {1234, 3, KF_DIST_NORMAL, {0, 1}, 0};
	struct kf_fill g = f;
	for (uint64_t i = 0; i < 1000; i++)
		CHECK(kf_rng_value(&f, i) == kf_rng_value(&g, i));
	/* The high half of the index counts too. */
	CHECK(kf_rng_value(&f, 0) != kf_rng_value(&f, 1ull << 32));
	CHECK(kf_rng_value(&f, 5) != kf_rng_value(&f, 5 + (1ull << 32)));
}

/* A large host fill is split over threads: its elements are those of
 * kf_rng_value one at a time, bit for bit, at every part's edges (a size
 * that no part count divides), in float32 and bfloat16. */
static void test_backend_host_fill_in_parts_matches_one_at_a_time(void)
{
	const struct kf_backend_ops *ops = kf_backend_find("host");
	struct kf_err err = KF_ERR_INIT;
	void *ctx = NULL;
	CHECK(ops->init(&ctx, &err) == 0);
	const int64_t n = (3 << 20) + 7;
	float *x = kf_xmalloc((size_t)n * 4);
	uint16_t *b = kf_xmalloc((size_t)n * 2);
	struct kf_fill f = {0xfeedull, 1, KF_DIST_NORMAL, {0, 1}, 0};
	CHECK(ops->fill(ctx, x, KF_F32, n, &f, &err) == 0);
	CHECK(ops->fill(ctx, b, KF_BF16, n, &f, &err) == 0);
	int64_t bad = 0, first_bad = -1;
	for (int64_t i = 0; i < n; i++) {
		double v = kf_rng_value(&f, (uint64_t)i);
		float want = (float)v;
		uint16_t wb = kf_float_to_bf16(want);
		if (memcmp(&x[i], &want, 4) || b[i] != wb) {
			bad++;
			if (first_bad < 0)
				first_bad = i;
		}
	}
	CHECK_MSG(bad == 0, "%lld of %lld elements differ, the first at %lld",
		  (long long)bad, (long long)n, (long long)first_bad);
	free(x);
	free(b);
	ops->fini(ctx);
}

/* kf_rng_values (a fill's contiguous runs, drawn eight at a time) gives
 * kf_rng_value's values, bit for bit, for every distribution, across the
 * index's 2^32 boundary and for runs that do not fill the last block. */
static void test_backend_rng_values_match_one_at_a_time(void)
{
	static const int kinds[] = {
	    KF_DIST_NORMAL, KF_DIST_UNIFORM, KF_DIST_HEAVY,  KF_DIST_WIDE,
	    KF_DIST_INT,    KF_DIST_CONST,   KF_DIST_LARGE,  KF_DIST_DENORMAL,
	    KF_DIST_TIES,   KF_DIST_NEGATIVE, KF_DIST_ZEROS};
	static const uint64_t firsts[] = {0, 5, (1ull << 32) - 3};
	double got[37];
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (size_t a = 0; a < 3; a++) {
			struct kf_fill f = {0x123456789abcull + k, (uint32_t)a,
					    kinds[k], {0.25, 3}, 0};
			kf_rng_values(&f, firsts[a], 37, got);
			for (int i = 0; i < 37; i++) {
				double want = kf_rng_value(&f, firsts[a] + i);
				CHECK_MSG(memcmp(&got[i], &want, sizeof(want)) ==
					      0,
					  "kind %d, index %llu: %.17g, want "
					  "%.17g",
					  kinds[k],
					  (unsigned long long)(firsts[a] + i),
					  got[i], want);
			}
		}
}

static void test_backend_rng_streams_and_seeds_differ(void)
{
	struct kf_fill a = {1234, 0, KF_DIST_UNIFORM, {0, 1}, 0};
	struct kf_fill s = a, k = a, hi = a;
	s.stream = 1;
	k.seed = 1235;
	hi.seed = 1234 + (1ull << 32); /* the high half of the seed counts */
	int same_s = 0, same_k = 0, same_hi = 0;
	for (uint64_t i = 0; i < 1000; i++) {
		double v = kf_rng_value(&a, i);
		same_s += v == kf_rng_value(&s, i);
		same_k += v == kf_rng_value(&k, i);
		same_hi += v == kf_rng_value(&hi, i);
	}
	CHECK(same_s == 0 && same_k == 0 && same_hi == 0);
	/* Neighbouring indices of one stream are not repeats either. */
	CHECK(kf_rng_value(&a, 0) != kf_rng_value(&a, 1));
}

static void test_backend_rng_uniform_in_range(void)
{
	struct kf_fill f = {7, 0, KF_DIST_UNIFORM, {-2, 3}, 0};
	double sum = 0, lo = INFINITY, hi = -INFINITY;
	const int n = 100000;
	for (int i = 0; i < n; i++) {
		double v = kf_rng_value(&f, (uint64_t)i);
		CHECK_MSG(v >= -2 && v < 3, "value %d: %g", i, v);
		sum += v;
		lo = fmin(lo, v);
		hi = fmax(hi, v);
	}
	CHECK(fabs(sum / n - 0.5) < 0.05);
	CHECK(lo < -1.99 && hi > 2.99);
}

static void test_backend_rng_int_in_range_and_integral(void)
{
	struct kf_fill f = {11, 2, KF_DIST_INT, {-3, 4}, 0};
	int counts[7] = {0};
	const int n = 70000;
	for (int i = 0; i < n; i++) {
		double v = kf_rng_value(&f, (uint64_t)i);
		CHECK_MSG(v == floor(v), "value %d: %g", i, v);
		CHECK_MSG(v >= -3 && v < 4, "value %d: %g", i, v);
		counts[(int)v + 3]++;
	}
	for (int k = 0; k < 7; k++)
		CHECK_MSG(counts[k] > 9000 && counts[k] < 11000, "%d: %d",
			  k - 3, counts[k]);

	/* Fractional bounds: the integers in [0.5, 3.5) are 1, 2 and 3. */
	struct kf_fill g = {11, 2, KF_DIST_INT, {0.5, 3.5}, 0};
	int seen[4] = {0};
	for (int i = 0; i < 3000; i++) {
		double v = kf_rng_value(&g, (uint64_t)i);
		CHECK_MSG(v == 1 || v == 2 || v == 3, "value %g", v);
		seen[(int)v]++;
	}
	CHECK(seen[1] && seen[2] && seen[3]);

	/* A one-value range gives that value. */
	struct kf_fill one = {11, 2, KF_DIST_INT, {5, 6}, 0};
	for (int i = 0; i < 100; i++)
		CHECK(kf_rng_value(&one, (uint64_t)i) == 5);
}

static void test_backend_rng_heavy_is_clipped(void)
{
	/* Cauchy with scale 1 clipped to +-10: about 6% sit on the clip, and
	 * half of all values have |v| < 1. */
	struct kf_fill f = {3, 1, KF_DIST_HEAVY, {1, 10}, 0};
	const int n = 100000;
	int clipped = 0, inside1 = 0, neg = 0;
	for (int i = 0; i < n; i++) {
		double v = kf_rng_value(&f, (uint64_t)i);
		CHECK_MSG(v >= -10 && v <= 10, "value %d: %g", i, v);
		clipped += fabs(v) == 10;
		inside1 += fabs(v) < 1;
		neg += v < 0;
	}
	CHECK_MSG(clipped > n / 25 && clipped < n / 10, "%d clipped", clipped);
	CHECK(fabs((double)inside1 / n - 0.5) < 0.02);
	CHECK(fabs((double)neg / n - 0.5) < 0.02);
}

static void test_backend_rng_normal_moments(void)
{
	struct kf_fill f = {42, 0, KF_DIST_NORMAL, {0, 1}, 0};
	const int n = 100000;
	double sum = 0, sumsq = 0;
	int within1 = 0;
	for (int i = 0; i < n; i++) {
		double v = kf_rng_value(&f, (uint64_t)i);
		CHECK(isfinite(v));
		sum += v;
		sumsq += v * v;
		within1 += fabs(v) < 1;
	}
	double mean = sum / n, std = sqrt(sumsq / n - mean * mean);
	CHECK_MSG(fabs(mean) < 0.02, "mean %g", mean);
	CHECK_MSG(fabs(std - 1) < 0.02, "std %g", std);
	/* 68.3% within one standard deviation. */
	CHECK(fabs((double)within1 / n - 0.6827) < 0.01);

	/* Mean and std parameters shift and scale. */
	struct kf_fill g = {42, 0, KF_DIST_NORMAL, {5, 2}, 0};
	sum = sumsq = 0;
	for (int i = 0; i < n; i++) {
		double v = kf_rng_value(&g, (uint64_t)i);
		sum += v;
		sumsq += v * v;
	}
	mean = sum / n;
	std = sqrt(sumsq / n - mean * mean);
	CHECK_MSG(fabs(mean - 5) < 0.04, "mean %g", mean);
	CHECK_MSG(fabs(std - 2) < 0.04, "std %g", std);
}

static void test_backend_rng_wide_magnitudes(void)
{
	struct kf_fill f = {9, 0, KF_DIST_WIDE, {-4, 4}, 0};
	const int n = 100000;
	int neg = 0, small = 0;
	for (int i = 0; i < n; i++) {
		double v = kf_rng_value(&f, (uint64_t)i);
		double a = fabs(v);
		CHECK_MSG(a >= 1e-4 * (1 - 1e-12) && a <= 1e4 * (1 + 1e-12),
			  "value %d: %g", i, v);
		neg += v < 0;
		small += a < 1;
	}
	CHECK(fabs((double)neg / n - 0.5) < 0.02);
	CHECK(fabs((double)small / n - 0.5) < 0.02);
}

static void test_backend_rng_const_exact(void)
{
	struct kf_fill f = {1, 0, KF_DIST_CONST, {3.25, 0}, 0};
	for (uint64_t i = 0; i < 1000; i++)
		CHECK(kf_rng_value(&f, i) == 3.25);
	f.p[0] = -0.1;
	CHECK(kf_rng_value(&f, 77) == -0.1);
}

/* ---- half and bfloat16 ---- */

static void test_backend_half_to_float_exhaustive(void)
{
	/* Every half against its value by definition; every non-NaN half
	 * survives the round trip bit for bit, -0 included. */
	for (uint32_t h = 0; h < 65536; h++) {
		float f = kf_half_to_float((uint16_t)h);
		uint16_t back = kf_float_to_half(f);
		if (half_is_nan((uint16_t)h)) {
			CHECK_MSG(isnan(f), "%04x", h);
			CHECK_MSG(half_is_nan(back), "%04x -> %04x", h, back);
			CHECK((back & 0x8000u) == (h & 0x8000u));
			continue;
		}
		if ((h & 0x7fffu) == 0x7c00u)
			CHECK(isinf(f) && (f < 0) == (h >> 15));
		else
			CHECK_MSG((double)f == half_value((uint16_t)h),
				  "%04x: %.10g", h, (double)f);
		CHECK_MSG(back == h, "%04x -> %.10g -> %04x", h, (double)f,
			  back);
	}
}

static void test_backend_float_to_half_rounding(void)
{
	/* Around every half: the value itself, the midpoint to the next one
	 * (a tie: to even) and the floats just either side of it. */
	for (uint32_t h = 0; h < 0x7c00u; h++) {
		double lo = half_value((uint16_t)h);
		double hi = half_value((uint16_t)(h + 1));
		float mid = (float)((lo + hi) / 2);
		CHECK((double)mid == (lo + hi) / 2);
		float probes[] = {(float)lo, mid, nextafterf(mid, 0),
				  nextafterf(mid, INFINITY)};
		for (int k = 0; k < 4; k++)
			for (int s = 0; s < 2; s++) {
				float f = s ? -probes[k] : probes[k];
				uint16_t got = kf_float_to_half(f);
				uint16_t want = ref_float_to_half(f);
				CHECK_MSG(got == want,
					  "%.10g (%08x): %04x, want %04x",
					  (double)f, f32_bits(f), got, want);
			}
	}
	/* Random floats of every magnitude a half can hold or round to. */
	uint64_t st = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 1000000; i++) {
		uint32_t r = (uint32_t)xorshift64(&st);
		uint32_t exp = 96 + (r >> 8) % 48; /* 2^-31 .. 2^16 */
		uint32_t x = (r & 0x80000000u) | exp << 23 |
			     ((uint32_t)xorshift64(&st) & 0x7fffffu);
		float f = f32_from_bits(x);
		CHECK_MSG(kf_float_to_half(f) == ref_float_to_half(f),
			  "%08x: %04x, want %04x", x, kf_float_to_half(f),
			  ref_float_to_half(f));
	}
	/* Spot values everyone knows. */
	CHECK(kf_float_to_half(1.0f) == 0x3c00);
	CHECK(kf_float_to_half(-2.0f) == 0xc000);
	CHECK(kf_float_to_half(65504.0f) == 0x7bff);
	CHECK(kf_float_to_half(1.0f + 0x1p-11f) == 0x3c00); /* tie: even */
	CHECK(kf_float_to_half(1.0f + 0x3p-11f) == 0x3c02); /* tie: even */
	CHECK(kf_float_to_half(1.0f + 0x1p-11f + 0x1p-23f) == 0x3c01);
}

static void test_backend_float_to_half_overflow(void)
{
	CHECK(kf_float_to_half(65519.996f) == 0x7bff);
	CHECK(kf_float_to_half(65520.0f) == 0x7c00); /* tie goes to even */
	CHECK(kf_float_to_half(-65520.0f) == 0xfc00);
	CHECK(kf_float_to_half(1e10f) == 0x7c00);
	CHECK(kf_float_to_half(3.4e38f) == 0x7c00);
	CHECK(kf_float_to_half(INFINITY) == 0x7c00);
	CHECK(kf_float_to_half(-INFINITY) == 0xfc00);
	CHECK(half_is_nan(kf_float_to_half(NAN)));
	/* A NaN whose payload lives only in the low bits stays a NaN. */
	CHECK(half_is_nan(kf_float_to_half(f32_from_bits(0x7f800001u))));
	CHECK(half_is_nan(kf_float_to_half(f32_from_bits(0xff800001u))));
}

static void test_backend_half_subnormals(void)
{
	CHECK((double)kf_half_to_float(0x0001) == ldexp(1, -24));
	CHECK((double)kf_half_to_float(0x03ff) == ldexp(1023, -24));
	CHECK((double)kf_half_to_float(0x8001) == -ldexp(1, -24));
	CHECK(kf_float_to_half(0x1p-24f) == 0x0001);
	CHECK(kf_float_to_half(0x1p-25f) == 0x0000); /* tie: even (0) */
	CHECK(kf_float_to_half(0x3p-26f) == 0x0001); /* above the tie */
	CHECK(kf_float_to_half(0x3p-25f) == 0x0002); /* tie: even (2) */
	CHECK(kf_float_to_half(0x5p-25f) == 0x0002); /* tie: even (2) */
	CHECK(kf_float_to_half(-0x1p-24f) == 0x8001);
	CHECK(kf_float_to_half(0x1p-26f) == 0x0000);
	CHECK(kf_float_to_half(-0x1p-26f) == 0x8000); /* keeps the sign */
	CHECK(kf_float_to_half(1e-40f) == 0x0000);    /* float subnormal */
	/* The largest subnormal rounds up into the smallest normal. */
	CHECK(kf_float_to_half(0x1p-14f - 0x1p-26f) == 0x0400);
	CHECK(kf_float_to_half(0x1p-14f) == 0x0400);
}

static void test_backend_bf16_conversions(void)
{
	for (uint32_t b = 0; b < 65536; b++) {
		float f = kf_bf16_to_float((uint16_t)b);
		CHECK(f32_bits(f) == b << 16);
		uint16_t back = kf_float_to_bf16(f);
		if (bf16_is_nan((uint16_t)b))
			CHECK_MSG(bf16_is_nan(back), "%04x -> %04x", b, back);
		else
			CHECK_MSG(back == b, "%04x -> %04x", b, back);
	}
	/* Rounding: the value, the tie and either side of it, for every
	 * finite bfloat16 of both signs. */
	for (uint32_t b = 0; b < 0x7f80u; b++) {
		const uint32_t lows[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
		for (int k = 0; k < 6; k++)
			for (uint32_t s = 0; s < 2; s++) {
				uint32_t x = s << 31 | b << 16 | lows[k];
				float f = f32_from_bits(x);
				uint16_t got = kf_float_to_bf16(f);
				uint16_t want = ref_float_to_bf16(f);
				CHECK_MSG(got == want, "%08x: %04x, want %04x",
					  x, got, want);
			}
	}
	CHECK(kf_float_to_bf16(1.0f) == 0x3f80);
	CHECK(kf_float_to_bf16(1.0f + 0x1p-8f) == 0x3f80); /* tie: even */
	CHECK(kf_float_to_bf16(1.0f + 0x3p-8f) == 0x3f82); /* tie: even */
	CHECK(kf_float_to_bf16(3.4028235e38f) == 0x7f80);  /* max: to inf */
	CHECK(kf_float_to_bf16(INFINITY) == 0x7f80);
	CHECK(kf_float_to_bf16(-INFINITY) == 0xff80);
	CHECK(bf16_is_nan(kf_float_to_bf16(NAN)));
	CHECK(bf16_is_nan(kf_float_to_bf16(f32_from_bits(0x7f800001u))));
	CHECK(bf16_is_nan(kf_float_to_bf16(f32_from_bits(0xffffffffu))));
}

static void test_backend_load_store_round_to_dtype(void)
{
	unsigned char buf[64];
	kf_store_from_double(buf, KF_F16, 1, 1.5);
	CHECK(((uint16_t *)buf)[1] == 0x3e00);
	CHECK(kf_load_as_double(buf, KF_F16, 1) == 1.5);
	kf_store_from_double(buf, KF_BF16, 2, -2.0);
	CHECK(((uint16_t *)buf)[2] == 0xc000);
	CHECK(kf_load_as_double(buf, KF_BF16, 2) == -2.0);
	kf_store_from_double(buf, KF_F32, 3, 0.1);
	CHECK(((float *)buf)[3] == 0.1f);
	kf_store_from_double(buf, KF_F64, 4, 0.1);
	CHECK(kf_load_as_double(buf, KF_F64, 4) == 0.1);
	kf_store_from_double(buf, KF_I32, 5, 2.9);
	CHECK(((int32_t *)buf)[5] == 2);
	kf_store_from_double(buf, KF_I32, 5, -2.9);
	CHECK(kf_load_as_double(buf, KF_I32, 5) == -2);
	kf_store_from_double(buf, KF_I64, 6, -7.5);
	CHECK(((int64_t *)buf)[6] == -7);
	/* double -> float -> half rounds twice; for this value it agrees. */
	kf_store_from_double(buf, KF_F16, 0, 65504.0);
	CHECK(((uint16_t *)buf)[0] == 0x7bff);
}

/* ---- poison ---- */

static void test_backend_poison_bits_are_nan_for_floats(void)
{
	uint64_t b;
	kf_poison_bits(KF_F32, &b);
	float f = f32_from_bits((uint32_t)b);
	CHECK(isnan(f));
	CHECK(!(b & 0x00400000u)); /* signalling: arithmetic never makes it */
	volatile float zero = 0;
	CHECK(f32_bits(NAN) != (uint32_t)b);
	CHECK(f32_bits(zero / zero) != (uint32_t)b); /* arithmetic's NaN */

	kf_poison_bits(KF_F64, &b);
	double d;
	memcpy(&d, &b, 8);
	CHECK(isnan(d));
	CHECK(!(b & 0x0008000000000000ull));

	kf_poison_bits(KF_F16, &b);
	CHECK(half_is_nan((uint16_t)b));
	CHECK(!(b & 0x200u));
	CHECK(isnan(kf_half_to_float((uint16_t)b)));
	CHECK(b != kf_float_to_half(NAN));

	kf_poison_bits(KF_BF16, &b);
	CHECK(bf16_is_nan((uint16_t)b));
	CHECK(!(b & 0x40u));
	CHECK(isnan(kf_bf16_to_float((uint16_t)b)));
	CHECK(b != kf_float_to_bf16(NAN));

	kf_poison_bits(KF_I32, &b);
	CHECK((uint32_t)b == 0xa5a5a5a5u);
	kf_poison_bits(KF_I64, &b);
	CHECK(b == 0xa5a5a5a5a5a5a5a5ull);
}

static void test_backend_host_poison_fills_every_element(void)
{
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	struct kf_err err = KF_ERR_INIT;
	for (int dt = 0; dt < KF_DTYPE_COUNT; dt++) {
		const int64_t n = 37;
		size_t w = kf_dtype_bytes((enum kf_dtype)dt);
		void *p;
		CHECK(ops->alloc(ctx, w * n + 16, &p, &err) == 0);
		memset(p, 0, w * n + 16);
		CHECK(ops->poison(ctx, p, (enum kf_dtype)dt, n, &err) == 0);
		uint64_t bits;
		kf_poison_bits((enum kf_dtype)dt, &bits);
		for (int64_t i = 0; i < n; i++) {
			CHECK(!memcmp((char *)p + i * w, &bits, w));
			double v = kf_load_as_double(p, (enum kf_dtype)dt, i);
			if (kf_dtype_is_float((enum kf_dtype)dt))
				CHECK(isnan(v));
		}
		/* Nothing past the end. */
		for (size_t i = w * n; i < w * n + 16; i++)
			CHECK(((unsigned char *)p)[i] == 0);
		ops->free(ctx, p);
	}
	ops->fini(ctx);
}

/* The reference-noise nudge: specials and zeros stay, every other float32
 * moves exactly one unit in the last place, about half of them up, the
 * same under one seed and not under another; nothing past n. */
static void test_backend_host_nudge_moves_one_ulp(void)
{
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	struct kf_err err = KF_ERR_INIT;
	const int64_t n = 10000;
	uint32_t *a = malloc((n + 1) * 4), *b = malloc((n + 1) * 4),
		 *c = malloc((n + 1) * 4);
	const uint32_t special[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u,
				    0x7fc00000u, 0xffc00001u};
	for (int64_t i = 0; i <= n; i++)
		a[i] = f32_bits((float)sin((double)i) * 100);
	a[100] = 0x7f7fffffu; /* the largest finite */
	a[101] = 1;	      /* the smallest subnormal */
	a[102] = 0x80000001u;
	for (int k = 0; k < 6; k++)
		a[200 + k] = special[k];
	memcpy(b, a, (n + 1) * 4);
	memcpy(c, a, (n + 1) * 4);
	CHECK(ops->nudge(ctx, b, n, 42, 1, &err) == 0);
	CHECK(ops->nudge(ctx, c, n, 0x5851f42d4c957f2dull, 1, &err) == 0);
	int64_t up = 0, down = 0, other_seed_differs = 0;
	for (int64_t i = 0; i < n; i++) {
		bool fixed = (a[i] & 0x7fffffffu) == 0 ||
			     (a[i] & 0x7f800000u) == 0x7f800000u;
		CHECK(fixed == (i == 0 || (i >= 200 && i < 206)));
		if (fixed) {
			CHECK_MSG(b[i] == a[i], "special %llx moved",
				  (unsigned long long)a[i]);
			continue;
		}
		/* The smallest subnormal moves up or not at all. */
		if ((a[i] & 0x7fffffffu) == 1) {
			CHECK(b[i] == a[i] || b[i] == a[i] + 1);
			continue;
		}
		CHECK_MSG(b[i] == a[i] + 1 || b[i] == a[i] - 1,
			  "element %lld: %08x -> %08x", (long long)i, a[i],
			  b[i]);
		up += (b[i] & 0x7fffffffu) > (a[i] & 0x7fffffffu);
		down += (b[i] & 0x7fffffffu) < (a[i] & 0x7fffffffu);
		other_seed_differs += b[i] != c[i];
	}
	CHECK(b[100] == 0x7f7ffffeu); /* never to infinity */
	CHECK(b[101] != 0 && b[102] != 0x80000000u); /* never to zero */
	CHECK(b[n] == a[n]);
	CHECK_MSG(up > 4500 && down > 4500, "%lld up, %lld down",
		  (long long)up, (long long)down);
	CHECK_MSG(other_seed_differs > 4000, "%lld",
		  (long long)other_seed_differs);
	memcpy(c, a, (n + 1) * 4);
	CHECK(ops->nudge(ctx, c, n, 42, 1, &err) == 0);
	CHECK(!memcmp(b, c, (n + 1) * 4));
	free(a);
	free(b);
	free(c);
	ops->fini(ctx);
}

/* ---- the host ops table ---- */

static void test_backend_find(void)
{
	CHECK(kf_backend_find("nope") == NULL);
	CHECK(kf_backend_find("") == NULL);
	const struct kf_backend_ops *ops = kf_backend_find("host");
	CHECK(ops);
	CHECK_STR(ops->name, "host");
	CHECK(ops->version == KF_BACKEND_VERSION);
	CHECK(ops->device_type == kDLCPU);
	CHECK(ops->init && ops->fini && ops->alloc && ops->free && ops->copy &&
	      ops->read && ops->fill && ops->poison && ops->compare &&
	      ops->write && ops->checksum && ops->sync && ops->time_call);
}

static void test_backend_host_init_describe_alloc(void)
{
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	struct kf_err err = KF_ERR_INIT;
	cJSON *d = ops->describe(ctx);
	CHECK(cJSON_IsObject(d));
	CHECK(kf_json_str(d, "name") && *kf_json_str(d, "name"));
	cJSON_Delete(d);
	CHECK(ops->stream(ctx) == NULL);

	const size_t sizes[] = {0, 1, 63, 64, 65, 1000, 1 << 20};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p = NULL;
		CHECK(ops->alloc(ctx, sizes[i], &p, &err) == 0);
		CHECK(p && (uintptr_t)p % 64 == 0);
		memset(p, 0x5a, sizes[i]); /* all of it is usable */
		ops->free(ctx, p);
	}
	ops->free(ctx, NULL);

	char src[100], dst[100], back[100];
	for (int i = 0; i < 100; i++)
		src[i] = (char)i;
	CHECK(ops->copy(ctx, dst, src, 100, &err) == 0);
	CHECK(ops->read(ctx, back, dst, 100, &err) == 0);
	CHECK(!memcmp(back, src, 100));
	CHECK(ops->write(ctx, dst, src, 100, &err) == 0);
	CHECK(!memcmp(dst, src, 100));
	CHECK(ops->sync(ctx, &err) == 0);
	ops->fini(ctx);
}

static void test_backend_host_fill_matches_rng(void)
{
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	struct kf_err err = KF_ERR_INIT;
	const int64_t n = 4096;
	struct kf_fill f = {99, 4, KF_DIST_NORMAL, {0, 1}, 0};
	float *a = kf_xmalloc(n * 4), *b = kf_xmalloc(n * 4);
	CHECK(ops->fill(ctx, a, KF_F32, n, &f, &err) == 0);
	for (int64_t i = 0; i < n; i++)
		CHECK(a[i] == (float)kf_rng_value(&f, (uint64_t)i));
	/* The same fill again gives the same bytes; another stream not. */
	CHECK(ops->fill(ctx, b, KF_F32, n, &f, &err) == 0);
	CHECK(!memcmp(a, b, n * 4));
	f.stream = 5;
	CHECK(ops->fill(ctx, b, KF_F32, n, &f, &err) == 0);
	CHECK(memcmp(a, b, n * 4));

	uint16_t *h = kf_xmalloc(n * 2);
	CHECK(ops->fill(ctx, h, KF_F16, n, &f, &err) == 0);
	for (int64_t i = 0; i < n; i++)
		CHECK(h[i] ==
		      kf_float_to_half((float)kf_rng_value(&f, (uint64_t)i)));

	struct kf_fill fi = {99, 1, KF_DIST_INT, {-50, 50}, 0};
	int32_t *ints = kf_xmalloc(n * 4);
	CHECK(ops->fill(ctx, ints, KF_I32, n, &fi, &err) == 0);
	for (int64_t i = 0; i < n; i++) {
		CHECK(ints[i] == kf_rng_value(&fi, (uint64_t)i));
		CHECK(ints[i] >= -50 && ints[i] < 50);
	}
	free(a);
	free(b);
	free(h);
	free(ints);
	ops->fini(ctx);
}

/* A scattered fill (what each timed pair's fresh values are): only the
 * drawn places change, each to its own element's value, and the places
 * are spread so that no regular sample of the elements finds them all. */
static void test_backend_host_scattered_fill_changes_only_drawn_places(void)
{
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	struct kf_err err = KF_ERR_INIT;
	const int64_t n = 1 << 20, k = 256;
	float *a = kf_xmalloc(n * 4);
	unsigned char *drawn = calloc((size_t)n, 1);
	for (int64_t i = 0; i < n; i++)
		a[i] = -7.0f;
	struct kf_fill f = {0xfeedull, 2, KF_DIST_NORMAL, {0, 1}, k};
	CHECK(ops->fill(ctx, a, KF_F32, n, &f, &err) == 0);
	for (int64_t j = 0; j < k; j++) {
		int64_t at = kf_scatter_pos(&f, (uint64_t)j, n);
		CHECK(at >= 0 && at < n);
		drawn[at] = 1;
	}
	int64_t changed = 0, distinct = 0, wrong = 0;
	for (int64_t i = 0; i < n; i++) {
		distinct += drawn[i];
		if (a[i] != -7.0f)
			changed++;
		if (drawn[i] ? a[i] != (float)kf_rng_value(&f, (uint64_t)i)
			     : a[i] != -7.0f)
			wrong++;
	}
	CHECK_MSG(wrong == 0, "%lld elements not as drawn", (long long)wrong);
	CHECK_MSG(changed == distinct && distinct >= k - 2,
		  "%lld changed, %lld places drawn", (long long)changed,
		  (long long)distinct);
	/* Reading every 256th element (at any offset) finds few of them:
	 * one run of 256 would be found by every offset. */
	int64_t best = 0;
	for (int64_t off = 0; off < 256; off++) {
		int64_t seen = 0;
		for (int64_t i = off; i < n; i += 256)
			seen += drawn[i];
		if (seen > best)
			best = seen;
	}
	CHECK_MSG(best <= 16, "a stride-256 sample saw %lld of %lld",
		  (long long)best, (long long)distinct);
	/* Another seed draws other places. */
	struct kf_fill g = f;
	g.seed++;
	int64_t same = 0;
	for (int64_t j = 0; j < k; j++)
		same += drawn[kf_scatter_pos(&g, (uint64_t)j, n)];
	CHECK_MSG(same <= 4, "%lld places repeated", (long long)same);
	free(a);
	free(drawn);
	ops->fini(ctx);
}

static void test_backend_host_checksum_sees_one_byte(void)
{
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	struct kf_err err = KF_ERR_INIT;
	unsigned char buf[4096];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 31 + 7);
	uint64_t base, again;
	CHECK(ops->checksum(ctx, buf, sizeof(buf), &base, &err) == 0);
	CHECK(ops->checksum(ctx, buf, sizeof(buf), &again, &err) == 0);
	CHECK(base == again);
	for (size_t i = 0; i < sizeof(buf); i += 97) {
		for (int bit = 0; bit < 8; bit++) {
			buf[i] ^= (unsigned char)(1u << bit);
			uint64_t c;
			CHECK(ops->checksum(ctx, buf, sizeof(buf), &c, &err) ==
			      0);
			CHECK_MSG(c != base, "byte %zu bit %d", i, bit);
			buf[i] ^= (unsigned char)(1u << bit);
		}
	}
	/* Length counts: a trailing zero byte changes it. */
	uint64_t shorter;
	buf[4095] = 0;
	CHECK(ops->checksum(ctx, buf, 4095, &shorter, &err) == 0);
	CHECK(ops->checksum(ctx, buf, 4096, &again, &err) == 0);
	CHECK(shorter != again);
	ops->fini(ctx);
}

/* ---- compare ---- */

static void test_backend_compare_equal_buffers(void)
{
	const double v[] = {1, -2, 0.5, 0, 1e-3};
	const enum kf_dtype dts[] = {KF_F32,  KF_F64, KF_F16,
				     KF_BF16, KF_I32, KF_I64};
	for (size_t k = 0; k < 6; k++) {
		struct kf_cmp c =
		    compare_as(dts[k], v, v, 5, (struct kf_tolerance){0, 0});
		CHECK(c.n == 5);
		CHECK_MSG(c.mismatches == 0, "dtype %zu", k);
		CHECK(c.unwritten == 0);
		CHECK(c.max_abs == 0 && c.max_rel == 0);
		CHECK(c.worst_index >= 0 && c.worst_index < 5);
	}
	struct kf_cmp c =
	    compare_as(KF_F32, v, v, 0, (struct kf_tolerance){0, 0});
	CHECK(c.n == 0 && c.mismatches == 0 && c.worst_index == -1);
}

static void test_backend_compare_unwritten_counted_apart(void)
{
	/* A candidate that wrote 5 of 8 elements: the other 3 still hold the
	 * poison. They are unwritten (and, being NaN, mismatches too). */
	void *ctx;
	const struct kf_backend_ops *ops = host_open(&ctx);
	struct kf_err err = KF_ERR_INIT;
	const enum kf_dtype dts[] = {KF_F32,  KF_F64, KF_F16,
				     KF_BF16, KF_I32, KF_I64};
	for (size_t k = 0; k < 6; k++) {
		enum kf_dtype dt = dts[k];
		size_t w = kf_dtype_bytes(dt);
		void *got = kf_xmalloc(8 * w), *want = kf_xmalloc(8 * w);
		CHECK(ops->poison(ctx, got, dt, 8, &err) == 0);
		for (int i = 0; i < 8; i++) {
			kf_store_from_double(want, dt, i, i + 1);
			if (i < 5)
				kf_store_from_double(got, dt, i, i + 1);
		}
		struct kf_cmp c;
		CHECK(ops->compare(ctx, got, want, dt, 8,
				   (struct kf_tolerance){1e-3, 1e-3}, &c,
				   &err) == 0);
		CHECK_MSG(c.unwritten == 3, "dtype %d: %lld", (int)dt,
			  (long long)c.unwritten);
		CHECK_MSG(c.mismatches == 3, "dtype %d: %lld", (int)dt,
			  (long long)c.mismatches);
		CHECK(c.worst_index >= 5);
		if (kf_dtype_is_float(dt))
			CHECK(c.nan_got == 3);

		/* Where the reference itself holds the poison bits, an
		 * equal got is not "unwritten". */
		CHECK(ops->poison(ctx, want, dt, 8, &err) == 0);
		CHECK(ops->compare(ctx, got, want, dt, 8,
				   (struct kf_tolerance){1e-3, 1e-3}, &c,
				   &err) == 0);
		CHECK(c.unwritten == 0);
		free(got);
		free(want);
	}
	ops->fini(ctx);
}

static void test_backend_compare_nan_handling(void)
{
	const double want[] = {NAN, NAN, 1.0, 2.0};
	const double got[] = {NAN, 1.0, NAN, 2.0};
	struct kf_tolerance tol = {1e-3, 1e-3};
	const enum kf_dtype dts[] = {KF_F32, KF_F64, KF_F16, KF_BF16};
	for (int k = 0; k < 4; k++) {
		struct kf_cmp c = compare_as(dts[k], got, want, 4, tol);
		/* NaN vs NaN matches; NaN vs a number does not. */
		CHECK_MSG(c.mismatches == 2, "dtype %d", k);
		CHECK(c.nan_got == 2 && c.nan_want == 2);
		CHECK(c.inf_got == 0 && c.inf_want == 0);
		CHECK(c.unwritten == 0);
		CHECK(c.worst_index == 1 || c.worst_index == 2);
		CHECK(c.max_abs == 0); /* only element 3 is finite on both */
	}
}

/* A bit-exact task (atol = rtol = 0) compares bits: -0 is not +0 and a
 * NaN keeps its payload; any other tolerance compares values. */
static void test_backend_compare_exact_compares_bits(void)
{
	const uint32_t want[] = {0x00000000u, 0x7fc00001u, 0x7fc00001u,
				 0x3f800000u, 0x80000000u};
	const uint32_t got[] = {0x80000000u, 0x7fc00002u, 0x7fc00001u,
				0x3f800000u, 0x80000000u};
	struct kf_cmp c =
	    compare_raw(KF_F32, got, want, 5, (struct kf_tolerance){0, 0});
	CHECK_MSG(c.mismatches == 2, "%lld mismatches",
		  (long long)c.mismatches);
	CHECK(c.worst_index == 0 || c.worst_index == 1);
	CHECK(c.worst_got_bits == got[c.worst_index] &&
	      c.worst_want_bits == want[c.worst_index]);
	c = compare_raw(KF_F32, got, want, 5, (struct kf_tolerance){0, 1e-6});
	CHECK(c.mismatches == 0);
	/* Half precision: -0 against +0, and a signalling NaN quieted. */
	const uint16_t hw[] = {0x0000, 0x7d01, 0x3c00};
	const uint16_t hg[] = {0x8000, 0x7f01, 0x3c00};
	c = compare_raw(KF_F16, hg, hw, 3, (struct kf_tolerance){0, 0});
	CHECK(c.mismatches == 2);
	c = compare_raw(KF_F16, hw, hw, 3, (struct kf_tolerance){0, 0});
	CHECK(c.mismatches == 0);
}

/* The bits distribution: every special value of each float dtype, the
 * same bits for the same seed, never the poison pattern. */
static void test_backend_rng_bits_cover_the_specials(void)
{
	const enum kf_dtype dts[] = {KF_F32, KF_F64, KF_F16, KF_BF16};
	for (int k = 0; k < 4; k++) {
		enum kf_dtype dt = dts[k];
		struct kf_fill f = {99, 3, KF_DIST_BITS, {0, 0}, 0};
		uint64_t poison;
		kf_poison_bits(dt, &poison);
		int pz = 0, nz = 0, pinf = 0, ninf = 0, qnan = 0, snan = 0,
		    sub = 0, normal = 0;
		for (uint64_t i = 0; i < 8192; i++) {
			uint64_t b = kf_rng_bits(&f, dt, i);
			CHECK(b == kf_rng_bits(&f, dt, i));
			CHECK_MSG(b != poison, "dtype %d: the poison", k);
			unsigned char buf[8] = {0};
			memcpy(buf, &b, 8);
			double v = kf_load_as_double(buf, dt, 0);
			bool neg = b >> (kf_dtype_bytes(dt) * 8 - 1) & 1;
			if (v == 0)
				neg ? nz++ : pz++;
			else if (isinf(v))
				neg ? ninf++ : pinf++;
			else if (isnan(v)) {
				/* The quiet bit is the mantissa's top one. */
				uint64_t q = dt == KF_F64    ? 1ull << 51
					     : dt == KF_F16  ? 0x200
					     : dt == KF_BF16 ? 0x40
							     : 0x400000;
				(b & q) ? qnan++ : snan++;
			} else if (!(b & (dt == KF_F64	 ? 0x7ff0000000000000ull
					  : dt == KF_F16 ? 0x7c00
					  : dt == KF_BF16 ? 0x7f80
							  : 0x7f800000)))
				sub++; /* exponent field zero: subnormal */
			else
				normal++;
		}
		CHECK_MSG(pz > 300 && nz > 300 && pinf > 200 && ninf > 200 &&
			      qnan > 200 && snan > 200 && sub > 500 &&
			      normal > 2000,
			  "dtype %d: +0 %d -0 %d +inf %d -inf %d qnan %d snan "
			  "%d subnormal %d normal %d",
			  k, pz, nz, pinf, ninf, qnan, snan, sub, normal);
	}
}

static void test_backend_compare_inf_handling(void)
{
	const double want[] = {INFINITY, -INFINITY, INFINITY, 1e30, 5};
	const double got[] = {INFINITY, -INFINITY, -INFINITY, INFINITY, 5};
	struct kf_cmp c =
	    compare_as(KF_F64, got, want, 5, (struct kf_tolerance){1, 1});
	/* Same-signed infinities match; anything else against one is off,
	 * whatever the tolerance. */
	CHECK(c.mismatches == 2);
	CHECK(c.inf_got == 4 && c.inf_want == 3);
	CHECK(c.nan_got == 0 && c.nan_want == 0);
	CHECK(c.worst_index == 2 || c.worst_index == 3);
	CHECK(c.max_abs == 0);

	/* Overflow to infinity in half precision against a finite want. */
	const double big[] = {70000, 1};
	const double ok[] = {60000, 1};
	c = compare_as(KF_F16, big, ok, 2, (struct kf_tolerance){1e-2, 1e-2});
	CHECK(c.mismatches == 1 && c.inf_got == 1 && c.worst_index == 0);
}

static void test_backend_compare_worst_index(void)
{
	const double want[] = {1, 1, 1, 1, 1, 1, 1, 1};
	const double got[] = {1, 1, 1.1, 1, 1, 1.5, 1, 1.3};
	struct kf_cmp c =
	    compare_as(KF_F64, got, want, 8, (struct kf_tolerance){0.01, 0});
	CHECK(c.mismatches == 3);
	CHECK(c.worst_index == 5);
	CHECK(c.worst_got == 1.5 && c.worst_want == 1);
	CHECK(fabs(c.max_abs - 0.5) < 1e-15);
	CHECK(fabs(c.max_rel - 0.5) < 1e-15);

	/* All inside: the worst is the one nearest the limit. */
	const double close[] = {1.001, 1, 1.004, 1.002, 1, 1, 1, 1};
	c = compare_as(KF_F64, close, want, 8, (struct kf_tolerance){0.005, 0});
	CHECK(c.mismatches == 0);
	CHECK(c.worst_index == 2);

	/* Measured against the tolerance, not in absolute terms: 1 off of
	 * 1000 is better than 0.5 off of 1 under rtol 1%. */
	const double w2[] = {1000, 1};
	const double g2[] = {1001, 1.5};
	c = compare_as(KF_F64, g2, w2, 2, (struct kf_tolerance){0, 0.01});
	CHECK(c.mismatches == 1);
	CHECK(c.worst_index == 1);
	CHECK(c.max_abs == 1);
}

static void test_backend_compare_tolerance_boundary(void)
{
	/* |got - want| <= atol + rtol * |want| is inside, exactly at the
	 * boundary; one ulp further is outside. The values keep got - want
	 * exact in double, one ulp further included. */
	const struct {
		double got, want, atol, rtol;
	} edge[] = {
	    {1.5, 1.0, 0.5, 0},	       {1.25, 1.75, 0.5, 0},
	    {2.5, 2.0, 0, 0.25},       {-2.75, -4.0, 0.25, 0.25},
	    {-5.25, -4.0, 0.25, 0.25},
	};
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		struct kf_tolerance tol = {edge[i].atol, edge[i].rtol};
		struct kf_cmp c =
		    compare_as(KF_F64, &edge[i].got, &edge[i].want, 1, tol);
		CHECK_MSG(c.mismatches == 0, "case %zu", i);
		double away = edge[i].got > edge[i].want ? INFINITY : -INFINITY;
		double out = nextafter(edge[i].got, away);
		c = compare_as(KF_F64, &out, &edge[i].want, 1, tol);
		CHECK_MSG(c.mismatches == 1, "case %zu", i);
	}
	/* The same in float32: 1.5 against 1 with atol 0.5. */
	float g = 1.5f, w = 1.0f;
	struct kf_cmp c =
	    compare_raw(KF_F32, &g, &w, 1, (struct kf_tolerance){0.5, 0});
	CHECK(c.mismatches == 0);
	g = nextafterf(1.5f, 2.0f);
	c = compare_raw(KF_F32, &g, &w, 1, (struct kf_tolerance){0.5, 0});
	CHECK(c.mismatches == 1);
	/* Zero tolerance means exact. */
	const double one = 1, next = nextafter(1.0, 2.0);
	c = compare_as(KF_F64, &next, &one, 1, (struct kf_tolerance){0, 0});
	CHECK(c.mismatches == 1);
}

static void test_backend_compare_ints_exact(void)
{
	const int32_t w32[] = {5, -7, 100, INT32_MIN, INT32_MAX};
	const int32_t g32[] = {5, -7, 101, INT32_MIN, INT32_MAX};
	struct kf_cmp c =
	    compare_raw(KF_I32, g32, w32, 5, (struct kf_tolerance){0, 0});
	CHECK(c.mismatches == 1);
	CHECK(c.worst_index == 2);
	CHECK(c.worst_got == 101 && c.worst_want == 100);
	CHECK(c.unwritten == 0 && c.nan_got == 0);

	/* int64 beyond 2^53, where doubles can no longer tell them apart. */
	const int64_t w64[] = {1ll << 53, INT64_MAX, INT64_MIN, 42};
	const int64_t g64[] = {(1ll << 53) + 1, INT64_MAX - 1, INT64_MIN, 42};
	c = compare_raw(KF_I64, g64, w64, 4, (struct kf_tolerance){0, 0});
	CHECK_MSG(c.mismatches == 2, "%lld mismatches",
		  (long long)c.mismatches);
	CHECK(c.max_abs == 1);
	c = compare_raw(KF_I64, w64, w64, 4, (struct kf_tolerance){0, 0});
	CHECK(c.mismatches == 0);
}

static void test_backend_compare_ints_worst_is_largest_error(void)
{
	/* With zero tolerance every mismatch is "infinitely" outside; the
	 * report must still point at the largest error, not the first. */
	const int32_t want[] = {0, 0, 0, 0};
	const int32_t got[] = {1, 0, 1000, 2};
	struct kf_cmp c =
	    compare_raw(KF_I32, got, want, 4, (struct kf_tolerance){0, 0});
	CHECK(c.mismatches == 3);
	CHECK_MSG(c.worst_index == 2, "worst_index %lld",
		  (long long)c.worst_index);
	CHECK(c.worst_got == 1000 && c.max_abs == 1000);
}

static void test_backend_compare_want_statistics(void)
{
	const double want[] = {1, 2, 3, NAN, INFINITY};
	struct kf_cmp c =
	    compare_as(KF_F64, want, want, 5, (struct kf_tolerance){0, 0});
	CHECK(c.mismatches == 0);
	CHECK(c.want_mean == 2);
	CHECK(fabs(c.want_std - sqrt(2.0 / 3.0)) < 1e-12);
	CHECK(c.want_min == 1 && c.want_max == 3);
	CHECK(c.nan_want == 1 && c.inf_want == 1);

	/* No finite element: the statistics are zero, not infinities. */
	const double none[] = {NAN, INFINITY};
	c = compare_as(KF_F64, none, none, 2, (struct kf_tolerance){0, 0});
	CHECK(c.want_min == 0 && c.want_max == 0 && c.want_mean == 0);
}

KF_TESTS(backend) = {
    KF_TEST(test_backend_philox_random123_vectors),
    KF_TEST(test_backend_rng_is_deterministic),
    KF_TEST(test_backend_rng_values_match_one_at_a_time),
    KF_TEST(test_backend_rng_streams_and_seeds_differ),
    KF_TEST(test_backend_rng_uniform_in_range),
    KF_TEST(test_backend_rng_int_in_range_and_integral),
    KF_TEST(test_backend_rng_heavy_is_clipped),
    KF_TEST(test_backend_rng_normal_moments),
    KF_TEST(test_backend_rng_wide_magnitudes),
    KF_TEST(test_backend_rng_const_exact),
    KF_TEST(test_backend_half_to_float_exhaustive),
    KF_TEST(test_backend_float_to_half_rounding),
    KF_TEST(test_backend_float_to_half_overflow),
    KF_TEST(test_backend_half_subnormals),
    KF_TEST(test_backend_bf16_conversions),
    KF_TEST(test_backend_load_store_round_to_dtype),
    KF_TEST(test_backend_poison_bits_are_nan_for_floats),
    KF_TEST(test_backend_host_poison_fills_every_element),
    KF_TEST(test_backend_host_nudge_moves_one_ulp),
    KF_TEST(test_backend_find),
    KF_TEST(test_backend_host_init_describe_alloc),
    KF_TEST(test_backend_host_fill_matches_rng),
    KF_TEST(test_backend_host_scattered_fill_changes_only_drawn_places),
    KF_TEST(test_backend_host_checksum_sees_one_byte),
    KF_TEST(test_backend_host_fill_in_parts_matches_one_at_a_time),
    KF_TEST(test_backend_compare_equal_buffers),
    KF_TEST(test_backend_compare_unwritten_counted_apart),
    KF_TEST(test_backend_compare_nan_handling),
    KF_TEST(test_backend_compare_exact_compares_bits),
    KF_TEST(test_backend_rng_bits_cover_the_specials),
    KF_TEST(test_backend_compare_inf_handling),
    KF_TEST(test_backend_compare_worst_index),
    KF_TEST(test_backend_compare_tolerance_boundary),
    KF_TEST(test_backend_compare_ints_exact),
    KF_TEST(test_backend_compare_ints_worst_is_largest_error),
    KF_TEST(test_backend_compare_want_statistics),
    KF_TESTS_END,
};
