/*
 * Fast candidate for linear/matmul_bf16: widen bfloat16 to float while
 * packing (a shift), then a blocked GEMM around a 6x16 float micro-kernel
 * (gcc vector extensions); each output is rounded to bfloat16 once.
 */
#include <stdlib.h>
#include <string.h>

#include <kforge/kernel.h>

typedef float v8f __attribute__((vector_size(32)));

#define MR 6  /* rows of C per micro-tile */
#define NR 16 /* columns of C per micro-tile: two 8-float vectors */
#define NC 64 /* columns of B per packed block (a multiple of NR) */

static inline v8f load8(const float *p)
{
	v8f v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void store8(float *p, v8f v)
{
	memcpy(p, &v, sizeof(v));
}

/*
 * C[0..mr)[0..nr) (row stride ldc) = bf16(Ap * Bp) over all k steps: the
 * whole depth is done here, in float registers, so C is rounded only once.
 * Ap is k x MR and Bp is k x NR (k-major, zero-padded).
 */
static void micro_kernel(int64_t k, const float *restrict ap,
			 const float *restrict bp, uint16_t *restrict c,
			 int64_t ldc, int mr, int nr)
{
	v8f acc[MR][2];
	float tile[MR][NR];

	for (int r = 0; r < MR; r++)
		acc[r][0] = acc[r][1] = (v8f){0};
	for (int64_t p = 0; p < k; p++) {
		v8f b0 = load8(bp + p * NR), b1 = load8(bp + p * NR + 8);
		for (int r = 0; r < MR; r++) {
			float a = ap[p * MR + r];
			acc[r][0] += a * b0;
			acc[r][1] += a * b1;
		}
	}
	for (int r = 0; r < MR; r++) {
		store8(tile[r], acc[r][0]);
		store8(tile[r] + 8, acc[r][1]);
	}
	for (int r = 0; r < mr; r++)
		for (int j = 0; j < nr; j++)
			c[r * ldc + j] = kf_float_to_bf16(tile[r][j]);
}

/* Bp <- float(B[0..k)[0..nc)) as NR-wide k-major panels, zero-padded. */
static void pack_b(const uint16_t *b, int64_t ldb, int64_t k, int64_t nc,
		   float *restrict bp)
{
	for (int64_t j0 = 0; j0 < nc; j0 += NR) {
		int64_t w = nc - j0 < NR ? nc - j0 : NR;
		for (int64_t p = 0; p < k; p++) {
			const uint16_t *src = b + p * ldb + j0;
			int64_t j;
			for (j = 0; j < w; j++)
				bp[p * NR + j] = kf_bf16_to_float(src[j]);
			for (; j < NR; j++)
				bp[p * NR + j] = 0.0f;
		}
		bp += k * NR;
	}
}

/* Ap <- float(A[0..mr)[0..k)) as one k-major MR-row panel, zero-padded. */
static void pack_a(const uint16_t *a, int64_t lda, int64_t k, int mr,
		   float *restrict ap)
{
	for (int64_t p = 0; p < k; p++) {
		int r;
		for (r = 0; r < mr; r++)
			ap[p * MR + r] = kf_bf16_to_float(a[r * lda + p]);
		for (; r < MR; r++)
			ap[p * MR + r] = 0.0f;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const uint16_t *a = in[0].data, *b = in[1].data;
	uint16_t *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	/* scratch: K x NC floats of B and K x MR of A (140 KiB at K = 512) */
	float *bp = malloc((size_t)(k * (NC + MR)) * sizeof(float) + 1);
	float *ap = bp + k * NC;

	if (!bp)
		return 1;
	for (int64_t jc = 0; jc < n; jc += NC) {
		int64_t nc = n - jc < NC ? n - jc : NC;
		pack_b(b + jc, n, k, nc, bp);
		for (int64_t ic = 0; ic < m; ic += MR) {
			int mr = m - ic < MR ? (int)(m - ic) : MR;
			pack_a(a + ic * k, k, k, mr, ap);
			for (int64_t j0 = 0; j0 < nc; j0 += NR) {
				int nr = nc - j0 < NR ? (int)(nc - j0) : NR;
				micro_kernel(k, ap, bp + j0 * k,
					     c + ic * n + jc + j0, n, mr, nr);
			}
		}
	}
	free(bp);
	return 0;
}
