/*
 * backend.c: what every backend shares: the registry of ops tables, the
 * counter-based input generator, poison patterns and element conversions.
 */
#include <math.h>
#include <string.h>

#include <kforge/backend.h>

extern const struct kf_backend_ops kf_backend_host;
extern const struct kf_backend_ops kf_backend_cuda;

static const struct kf_backend_ops *const backends[] = {
    &kf_backend_host,
    &kf_backend_cuda,
};

const struct kf_backend_ops *kf_backend_find(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(backends[i]->name, name))
			return backends[i];
	return NULL;
}

void kf_poison_bits(enum kf_dtype dt, uint64_t *bits)
{
	switch (dt) {
	case KF_F32:
		*bits = 0x7fa5a5a5u; /* signalling NaN: arithmetic never
					produces it */
		break;
	case KF_F64:
		*bits = 0x7ff4a5a5a5a5a5a5ull;
		break;
	case KF_F16:
		*bits = 0x7d5au;
		break;
	case KF_BF16:
		*bits = 0x7fa5u;
		break;
	case KF_I32:
		*bits = 0xa5a5a5a5u;
		break;
	default:
		*bits = 0xa5a5a5a5a5a5a5a5ull;
		break;
	}
}

static uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t *hi)
{
	uint64_t p = (uint64_t)a * b;
	*hi = (uint32_t)(p >> 32);
	return (uint32_t)p;
}

/* One Philox-4x32 round on (c0, c1, c2, c3) under round key (a, b). */
static inline void philox_round(uint32_t *c0, uint32_t *c1, uint32_t *c2,
				uint32_t *c3, uint32_t a, uint32_t b)
{
	uint32_t hi0, hi1;
	uint32_t lo0 = mulhilo(0xD2511F53u, *c0, &hi0);
	uint32_t lo1 = mulhilo(0xCD9E8D57u, *c2, &hi1);
	*c0 = hi1 ^ *c1 ^ a;
	*c1 = lo1;
	*c2 = hi0 ^ *c3 ^ b;
	*c3 = lo0;
}

void kf_philox4x32(const uint32_t ctr[4], const uint32_t key[2],
		   uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];
	for (int r = 0; r < 10; r++) {
		philox_round(&c0, &c1, &c2, &c3, k0, k1);
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

/* A double in [0, 1) from 53 random bits. */
static double unit(uint32_t a, uint32_t b)
{
	return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) *
	       (1.0 / 9007199254740992.0);
}

/* The layout of a floating-point dtype's bits. */
struct fbits {
	int width; /* bits */
	uint64_t exp, mant, quiet;
};

static struct fbits float_bits(enum kf_dtype dt)
{
	switch (dt) {
	case KF_F64:
		return (struct fbits){64, 0x7ff0000000000000ull,
				      0x000fffffffffffffull, 1ull << 51};
	case KF_F16:
		return (struct fbits){16, 0x7c00, 0x03ff, 0x0200};
	case KF_BF16:
		return (struct fbits){16, 0x7f80, 0x007f, 0x0040};
	default:
		return (struct fbits){32, 0x7f800000u, 0x007fffffu,
				      0x00400000u};
	}
}

int64_t kf_scatter_pos(const struct kf_fill *f, uint64_t j, int64_t n)
{
	const uint32_t ctr[4] = {(uint32_t)j, (uint32_t)(j >> 32), f->stream,
				 0x73636174u};
	const uint32_t key[2] = {(uint32_t)f->seed, (uint32_t)(f->seed >> 32)};
	uint32_t r[4];
	kf_philox4x32(ctr, key, r);
	return (int64_t)((((uint64_t)r[0] << 32) | r[1]) % (uint64_t)n);
}

uint64_t kf_rng_bits(const struct kf_fill *f, enum kf_dtype dt, uint64_t index)
{
	const uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32),
				 f->stream, 0x6b666f72u};
	const uint32_t key[2] = {(uint32_t)f->seed, (uint32_t)(f->seed >> 32)};
	uint32_t r[4];
	kf_philox4x32(ctr, key, r);
	struct fbits b = float_bits(dt);
	uint64_t sign = (uint64_t)(r[2] >> 31) << (b.width - 1);
	uint64_t all = b.width == 64 ? ~0ull : (1ull << b.width) - 1;
	uint64_t rnd = ((uint64_t)r[0] << 32 | r[1]) & all;
	uint64_t m = rnd & b.mant, v;
	switch (r[3] & 15) {
	case 0:
	case 1: /* +-0 */
		v = sign;
		break;
	case 2: /* +-inf */
		v = sign | b.exp;
		break;
	case 3: /* quiet NaN, random payload */
		v = sign | b.exp | b.quiet | m;
		break;
	case 4: /* signalling NaN: quiet bit clear, payload not zero */
		m &= ~b.quiet;
		v = sign | b.exp | (m ? m : 1);
		break;
	case 5:
	case 6: /* subnormal */
		v = sign | (m ? m : 1);
		break;
	case 7: /* the largest finite value */
		v = sign | (b.exp - (b.exp & -b.exp)) | b.mant;
		break;
	default:
		v = rnd;
		break;
	}
	uint64_t poison;
	kf_poison_bits(dt, &poison);
	return v == poison ? v ^ 1 : v;
}

static double value_of(const struct kf_fill *f, const uint32_t r[4]);

double kf_rng_value(const struct kf_fill *f, uint64_t index)
{
	const uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32),
				 f->stream, 0x6b666f72u};
	const uint32_t key[2] = {(uint32_t)f->seed, (uint32_t)(f->seed >> 32)};
	uint32_t r[4];
	kf_philox4x32(ctr, key, r);
	return value_of(f, r);
}

/* Lanes of kf_rng_values' Philox: independent chains the CPU overlaps
 * (one chain is a latency-bound 10 rounds of multiplies; eight at once
 * were 2.3 times faster a value on the development machine). */
#define RNG_LANES 8

void kf_rng_values(const struct kf_fill *f, uint64_t first, int64_t n,
		   double *out)
{
	const uint32_t k0 = (uint32_t)f->seed, k1 = (uint32_t)(f->seed >> 32);
	for (int64_t at = 0; at < n; at += RNG_LANES) {
		uint32_t c0[RNG_LANES], c1[RNG_LANES], c2[RNG_LANES],
		    c3[RNG_LANES];
		for (int l = 0; l < RNG_LANES; l++) {
			uint64_t i = first + (uint64_t)at + (uint64_t)l;
			c0[l] = (uint32_t)i;
			c1[l] = (uint32_t)(i >> 32);
			c2[l] = f->stream;
			c3[l] = 0x6b666f72u;
		}
		uint32_t a = k0, b = k1;
		/* kf_philox4x32's rounds, lane by lane. */
		for (int r = 0; r < 10; r++) {
			for (int l = 0; l < RNG_LANES; l++)
				philox_round(&c0[l], &c1[l], &c2[l], &c3[l], a,
					     b);
			a += 0x9E3779B9u;
			b += 0xBB67AE85u;
		}
		for (int l = 0; l < RNG_LANES && at + l < n; l++) {
			const uint32_t r4[4] = {c0[l], c1[l], c2[l], c3[l]};
			out[at + l] = value_of(f, r4);
		}
	}
}

/* The value of f's distribution from one Philox block r. */
static double value_of(const struct kf_fill *f, const uint32_t r[4])
{
	double u0 = unit(r[0], r[1]), u1 = unit(r[2], r[3]);
	switch (f->kind) {
	case KF_DIST_NORMAL: {
		double z = sqrt(-2.0 * log(1.0 - u0)) * cos(2.0 * M_PI * u1);
		return f->p[0] + f->p[1] * z;
	}
	case KF_DIST_UNIFORM:
		return f->p[0] + (f->p[1] - f->p[0]) * u0;
	case KF_DIST_HEAVY: {
		double c = f->p[0] * tan(M_PI * (u0 - 0.5));
		return c > f->p[1] ? f->p[1] : c < -f->p[1] ? -f->p[1] : c;
	}
	case KF_DIST_WIDE: {
		double m = pow(10.0, f->p[0] + (f->p[1] - f->p[0]) * u0);
		return u1 < 0.5 ? -m : m;
	}
	case KF_DIST_INT: {
		double lo = ceil(f->p[0]), hi = ceil(f->p[1]);
		double v = lo + floor((hi - lo) * u0);
		return v >= hi ? hi - 1 : v;
	}
	case KF_DIST_CONST:
		return f->p[0];
	case KF_DIST_LARGE:
		return f->p[1] + f->p[0] * sqrt(-2.0 * log(1.0 - u0)) *
				     cos(2.0 * M_PI * u1);
	case KF_DIST_DENORMAL: {
		/* A coin from the low bits of u1, nearly independent of the
		 * sign its top bit gives. */
		double coin = fmod(u1 * 1048576.0, 1.0);
		double m = coin < 0.5 ? exp2(f->p[0] + (f->p[1] - f->p[0]) * u0)
				      : 0.5 + 1.5 * u0;
		return u1 < 0.5 ? -m : m;
	}
	case KF_DIST_TIES: {
		double k = floor(f->p[0] * u0);
		k = k >= f->p[0] ? f->p[0] - 1 : k;
		return f->p[1] * (k - floor(f->p[0] / 2));
	}
	case KF_DIST_NEGATIVE:
		return f->p[1] - f->p[0] * fabs(sqrt(-2.0 * log(1.0 - u0)) *
						cos(2.0 * M_PI * u1));
	case KF_DIST_BITS: /* not a value: fills take kf_rng_bits */
		return NAN;
	case KF_DIST_ZEROS: {
		double coin = fmod(u1 * 1048576.0, 1.0);
		return coin < f->p[0] ? 0.0
				      : f->p[1] * sqrt(-2.0 * log(1.0 - u0)) *
					    cos(2.0 * M_PI * u1);
	}
	}
	return 0;
}

double kf_load_as_double(const void *base, enum kf_dtype dt, int64_t i)
{
	switch (dt) {
	case KF_F32:
		return ((const float *)base)[i];
	case KF_F64:
		return ((const double *)base)[i];
	case KF_F16:
		return kf_half_to_float(((const uint16_t *)base)[i]);
	case KF_BF16:
		return kf_bf16_to_float(((const uint16_t *)base)[i]);
	case KF_I32:
		return ((const int32_t *)base)[i];
	default:
		return (double)((const int64_t *)base)[i];
	}
}

void kf_store_from_double(void *base, enum kf_dtype dt, int64_t i, double v)
{
	switch (dt) {
	case KF_F32:
		((float *)base)[i] = (float)v;
		break;
	case KF_F64:
		((double *)base)[i] = v;
		break;
	case KF_F16:
		((uint16_t *)base)[i] = kf_float_to_half((float)v);
		break;
	case KF_BF16:
		((uint16_t *)base)[i] = kf_float_to_bf16((float)v);
		break;
	case KF_I32:
		((int32_t *)base)[i] = (int32_t)v;
		break;
	default:
		((int64_t *)base)[i] = (int64_t)v;
		break;
	}
}

/* The DLPack type of a task's dtype. */
DLDataType kf_dl_dtype(enum kf_dtype d)
{
	DLDataType t = {kDLFloat, 32, 1};
	switch (d) {
	case KF_F32:
		break;
	case KF_F64:
		t.bits = 64;
		break;
	case KF_F16:
		t.bits = 16;
		break;
	case KF_BF16:
		t.code = kDLBfloat;
		t.bits = 16;
		break;
	case KF_I32:
		t.code = kDLInt;
		break;
	default:
		t.code = kDLInt;
		t.bits = 64;
		break;
	}
	return t;
}
