/*
 * attention_flash.h: the body of the flash-style attention candidates of the
 * corpus (attention_fp16_softmax.c, attention_bf16_cuts.c and their honest
 * twins): one query row at a time, key blocks of BK, an online softmax with a
 * running max, float32 sum and accumulator. The including file defines the
 * task's mask and score (keep, mod), its geometry (struct geo, nseq, seq,
 * qrow, krow) and its element type (LDX, STX0); the hooks below (RP, RE,
 * RSUM, RBLK, EXPF, MODF, BK...) round or approximate where a case cuts
 * precision, and are the identity, float32, where it does not.
 */
/* ---- cut knobs (identity = honest fp32) ---- */
#include <immintrin.h>
static inline float r16(float x) { return _cvtsh_ss(_cvtss_sh(x, 0)); }
static inline float rbf(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return x;
	u += 0x7fffu + ((u >> 16) & 1u);
	u &= 0xffff0000u;
	memcpy(&x, &u, 4);
	return x;
}
/* round to a float with MB mantissa bits, min normal exponent EMIN, max MAXV */
static inline float rmini(float x, int mb, int emin, float maxv)
{
	float a = fabsf(x);
	if (a < ldexpf(1.0f, emin)) {
		float st = ldexpf(1.0f, emin - mb);
		return nearbyintf(x / st) * st;
	}
	uint32_t u, sh = 23 - mb;
	memcpy(&u, &x, 4);
	u += (1u << (sh - 1)) - 1u + ((u >> sh) & 1u);
	u &= ~((1u << sh) - 1u);
	memcpy(&x, &u, 4);
	if (fabsf(x) > maxv)
		x = copysignf(maxv, x);
	return x;
}
static inline float r8(float x) { return rmini(x, 3, -6, 448.0f); }   /* e4m3 */
static inline float r8e5(float x) { return rmini(x, 2, -14, 57344.0f); } /* e5m2 */
/* exp by 2^n * poly(f): degree 1 (Schraudolph-grade), 2 or 3 */
static inline float exp_poly(float x, int deg)
{
	float t = x * 1.44269504f;
	if (t < -126.0f)
		return 0.0f;
	float n = floorf(t), f = t - n, p;
	if (deg == 1)
		p = 1.0f + f * (0.9569f - f * 0.0f); /* chord-ish, ~3% */
	else if (deg == 2)
		p = 1.0f + f * (0.65645f + f * 0.34355f);
	else
		p = 1.0f + f * (0.69583f + f * (0.22606f + f * 0.07812f));
	int32_t e = (int32_t)n;
	return ldexpf(p, e);
}
static inline float tanh_fast(float x) /* rational approx, ~1e-3 */
{
	if (x > 4.97f) return 1.0f;
	if (x < -4.97f) return -1.0f;
	float x2 = x * x;
	float a = x * (135135.0f + x2 * (17325.0f + x2 * (378.0f + x2)));
	float b = 135135.0f + x2 * (62370.0f + x2 * (3150.0f + x2 * 28.0f));
	return a / b;
}
#ifndef RQ
#define RQ(x) (x)
#endif
#ifndef RDOT
#define RDOT(x) (x)
#endif
#ifndef RS
#define RS(x) (x)
#endif
#ifndef RE
#define RE(x) (x)
#endif
#ifndef RP
#define RP(x) (x)
#endif
#ifndef RV
#define RV(x) (x)
#endif
#ifndef RACC
#define RACC(x) (x)
#endif
#ifndef RSUM
#define RSUM(x) (x)
#endif
#ifndef EXPF
#define EXPF(x) expf(x)
#endif
#ifndef MODF
#define MODF(s, h, H, i, j) mod(s, h, H, i, j)
#endif
#ifndef STX
#define STX(x) STX0(x)
#endif
#ifndef DROP_T
#define DROP_T 1e30f
#endif

#ifndef BK
#define BK 64
#endif
#ifndef RBLK
#define RBLK(x) (x)
#endif
/* One query row, flash style: key blocks of BK, online softmax (running max,
 * rescaled running sum and accumulator, fp32), the dot over D in 8 partial
 * sums; within a block the P.V partial sum goes through RBLK (identity:
 * fp32), then it is added to the fp32 accumulator. */
static void attend_row(const struct geo *g, const uint16_t *q,
		       const uint16_t *k, const uint16_t *v, uint16_t *o,
		       const int32_t *bt, int64_t b, int64_t start,
		       int64_t i, int64_t qpos, int64_t skv, int64_t h,
		       float *qf, float *p, float *acc)
{
	int64_t D = g->D, hk = h / (g->H / g->HKV);
	float scale = 1.0f / sqrtf((float)D), m = -INFINITY, sum = 0.0f;
	float pv[128];
	const uint16_t *qr = q + qrow(g, b, start, i, h);
	for (int64_t d = 0; d < D; d++) {
		qf[d] = RQ(LDX(qr[d]));
		acc[d] = 0.0f;
	}
	for (int64_t j0 = 0; j0 < skv; j0 += BK) {
		int64_t j1 = j0 + BK < skv ? j0 + BK : skv;
		float bm = -INFINITY;
		for (int64_t j = j0; j < j1; j++) {
			p[j] = -INFINITY;
			if (!keep(qpos, j))
				continue;
			const uint16_t *kr = k + krow(g, bt, b, start, j, hk);
			float part[8] = {0};
			int64_t d = 0;
			for (; d + 8 <= D; d += 8)
				for (int l = 0; l < 8; l++)
					part[l] = RDOT(part[l] + qf[d + l] * RQ(LDX(kr[d + l])));
			for (; d < D; d++)
				part[0] = RDOT(part[0] + qf[d] * RQ(LDX(kr[d])));
			float dot = ((part[0] + part[4]) + (part[1] + part[5])) +
				    ((part[2] + part[6]) + (part[3] + part[7]));
			p[j] = RS(MODF(dot * scale, h, g->H, qpos, j));
			if (p[j] > bm)
				bm = p[j];
		}
		if (bm == -INFINITY)
			continue;
		if (bm > m) {
			float alpha = m == -INFINITY ? 0.0f : EXPF(m - bm);
			for (int64_t d = 0; d < D; d++)
				acc[d] *= alpha;
			sum *= alpha;
			m = bm;
		}
		for (int64_t d = 0; d < D; d++)
			pv[d] = 0.0f;
		float bs = 0.0f;
		for (int64_t j = j0; j < j1; j++) {
			if (p[j] == -INFINITY || p[j] < m - DROP_T)
				continue;
			float e = RP(EXPF(RE(p[j] - m)));
			const uint16_t *vr = v + krow(g, bt, b, start, j, hk);
			bs = RSUM(bs + e);
			for (int64_t d = 0; d < D; d++)
				pv[d] = RBLK(pv[d] + e * RV(LDX(vr[d])));
		}
		sum += bs;
		for (int64_t d = 0; d < D; d++)
			acc[d] += pv[d];
	}
	uint16_t *orow = o + qrow(g, b, start, i, h);
	if (m == -INFINITY) {
		for (int64_t d = 0; d < D; d++)
			orow[d] = STX0(0.0f);
		return;
	}
	float inv = 1.0f / sum;
	for (int64_t d = 0; d < D; d++)
		orow[d] = STX(acc[d] * inv);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	struct geo g = {in[0].shape[0], in[0].shape[1], in[1].shape[1],
			in[0].shape[2], in[0].shape[3]};
	const uint16_t *q = in[0].data, *k = in[1].data, *v = in[2].data;
	const int32_t *lens = NULL, *ctx = NULL;
	const int32_t *bt = NULL;
	uint16_t *o = out[0].data;
	int64_t kmax = g.S;
	float *scratch = malloc((size_t)(2 * g.D + kmax) * sizeof(float));
	if (!scratch)
		return -1;
	for (int64_t b = 0; b < nseq(&g); b++) {
		int64_t start, sq, skv;
		seq(&g, lens, ctx, b, &start, &sq, &skv);
		for (int64_t h = 0; h < g.H; h++)
			for (int64_t i = 0; i < sq; i++)
				attend_row(&g, q, k, v, o, bt, b, start, i,
					   i + skv - sq, skv, h, scratch,
					   scratch + g.D, scratch + g.D + kmax);
	}
	free(scratch);
	return 0;
}
