/*
 * fast.c: attention/sdpa candidate: per head, k^T and v converted to float
 * once (S * D floats each of scratch); blocks of six query rows then go
 * through two register-tiled matmuls (q k^T, p v) around a vectorized exp.
 */
#include <math.h>
#include <stdlib.h>

#include <kforge/kernel.h>

#define QB 6 /* query rows per block */

/* GNU C vectors of 8 lanes; unaligned, may alias float / int32_t */
typedef float v8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t v8i __attribute__((vector_size(32), aligned(4), may_alias));

/* Half to float without branches, so loops of it vectorize: the 15 low bits
 * shifted into place and scaled by 2^112 rebias normals and subnormals
 * exactly; exponent 31 (inf, NaN) is forced to float's 255. */
static inline float h2f(uint16_t h)
{
	uint32_t bits = (uint32_t)(h & 0x7fffu) << 13, s;
	float f;

	memcpy(&f, &bits, 4);
	f *= 0x1p112f;
	memcpy(&bits, &f, 4);
	if ((h & 0x7c00u) == 0x7c00u)
		bits |= 0x7f800000u;
	s = (uint32_t)(h & 0x8000u) << 16;
	bits |= s;
	memcpy(&f, &bits, 4);
	return f;
}

/* e^x for x <= 0, 8 lanes: x = n ln2 + r, |r| <= ln2 / 2, e^r by its
 * degree-7 Taylor polynomial (relative error < 1e-8), 2^n by building the
 * exponent. Inputs below -87.3 flush to e^-87.3 ~ 1e-38, never denormal. */
static inline v8 exp8(v8 x)
{
	const v8 lo = x - x - 87.3f, magic = x - x + 12582912.0f; /* 1.5*2^23 */
	v8 t, r, p;
	v8i n;

	x = (v8)(((v8i)x & (x >= lo)) | ((v8i)lo & (x < lo)));
	t = x * 1.44269504f + magic; /* n sits in t's low mantissa bits */
	n = (v8i)t - (v8i)magic;
	t = t - magic;
	r = x - t * 0.693145752f - t * 1.42860677e-6f; /* ln2 in two parts */
	p = 1.0f / 5040 + r * (1.0f / 40320);
	p = 1.0f / 720 + r * p;
	p = 1.0f / 120 + r * p;
	p = 1.0f / 24 + r * p;
	p = 1.0f / 6 + r * p;
	p = 0.5f + r * p;
	p = 1.0f + r * p;
	p = 1.0f + r * p;
	return p * (v8)((n + 127) << 23);
}

/* c[r][j] = sum over t of a[r][t] * b[t][j] for r < nr, j < n, t < kk; nr is
 * a constant at every call, so the row loops unroll into registers. */
static inline __attribute__((always_inline)) void
gemm_rows(int nr, const float *restrict a, int64_t lda, const float *restrict b,
	  int64_t ldb, float *restrict c, int64_t ldc, int64_t kk, int64_t n)
{
	int64_t j = 0;

	for (; j + 16 <= n; j += 16) {
		v8 acc[QB][2] = {{{0}}};
		for (int64_t t = 0; t < kk; t++) {
			v8 b0 = *(const v8 *)(b + t * ldb + j);
			v8 b1 = *(const v8 *)(b + t * ldb + j + 8);
			for (int r = 0; r < nr; r++) {
				acc[r][0] += a[r * lda + t] * b0;
				acc[r][1] += a[r * lda + t] * b1;
			}
		}
		for (int r = 0; r < nr; r++) {
			*(v8 *)(c + r * ldc + j) = acc[r][0];
			*(v8 *)(c + r * ldc + j + 8) = acc[r][1];
		}
	}
	for (; j < n; j++) {
		for (int r = 0; r < nr; r++) {
			float acc = 0.0f;
			for (int64_t t = 0; t < kk; t++)
				acc += a[r * lda + t] * b[t * ldb + j];
			c[r * ldc + j] = acc;
		}
	}
}

/* p[0..S) <- exp(p - max p); returns the sum. */
static float softmax_row(float *p, int64_t S)
{
	float max = -INFINITY, sum = 0.0f;
	int64_t j = 0;
	v8 vs = {0};

	for (int64_t i = 0; i < S; i++)
		max = p[i] > max ? p[i] : max;
	for (; j + 8 <= S; j += 8) {
		v8 e = exp8(*(v8 *)(p + j) - max);
		*(v8 *)(p + j) = e;
		vs += e;
	}
	for (; j < S; j++) {
		p[j] = expf(p[j] - max);
		sum += p[j];
	}
	for (int l = 0; l < 8; l++)
		sum += vs[l];
	return sum;
}

/* nr <= QB query rows of one head: q, o [S, D] halves; kt [D, S] and
 * vf [S, D] floats; qf [QB, D], p [QB, S], of [QB, D] scratch. */
static inline __attribute__((always_inline)) void
rows(int nr, const uint16_t *q, uint16_t *o, const float *kt, const float *vf,
     float *qf, float *p, float *of, int64_t S, int64_t D, float scale)
{
	float sum[QB];

	for (int64_t e = 0; e < nr * D; e++)
		qf[e] = h2f(q[e]) * scale;
	gemm_rows(nr, qf, D, kt, S, p, S, D, S);
	for (int r = 0; r < nr; r++)
		sum[r] = softmax_row(p + r * S, S);
	gemm_rows(nr, p, S, vf, D, of, D, S, D);
	for (int r = 0; r < nr; r++)
		for (int64_t d = 0; d < D; d++)
			o[r * D + d] = kf_float_to_half(of[r * D + d] / sum[r]);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const uint16_t *q = in[0].data; /* [B, H, S, D] half */
	const uint16_t *k = in[1].data;
	const uint16_t *v = in[2].data;
	uint16_t *o = out[0].data;
	int64_t BH = in[0].shape[0] * in[0].shape[1];
	int64_t S = in[0].shape[2], D = in[0].shape[3];
	float scale = 1.0f / sqrtf((float)D);
	/* one head's k^T and v, plus one block's q, scores and output */
	float *kt = malloc((2 * S * D + QB * (2 * D + S)) * sizeof(float));
	float *vf = kt + S * D, *qf = vf + S * D, *p = qf + QB * D;
	float *of = p + QB * S;

	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!kt)
		return -1;
	for (int64_t bh = 0; bh < BH; bh++) {
		const uint16_t *qh = q + bh * S * D, *kh = k + bh * S * D;
		const uint16_t *vh = v + bh * S * D;
		uint16_t *oh = o + bh * S * D;
		for (int64_t j = 0; j < S; j++)
			for (int64_t d = 0; d < D; d++)
				kt[d * S + j] = h2f(kh[j * D + d]);
		for (int64_t e = 0; e < S * D; e++)
			vf[e] = h2f(vh[e]);
		int64_t i = 0;
		for (; i + QB <= S; i += QB)
			rows(QB, qh + i * D, oh + i * D, kt, vf, qf, p, of, S,
			     D, scale);
		for (; i < S; i++)
			rows(1, qh + i * D, oh + i * D, kt, vf, qf, p, of, S, D,
			     scale);
	}
	free(kt);
	return 0;
}
