/*
 * Fast candidate for linear/matmul: a packed, cache-blocked GEMM (GotoBLAS
 * layout) around a 6x16 register-tile micro-kernel written with gcc vector
 * extensions, so it needs no intrinsics header and no particular ISA.
 */
#include <string.h>

#include <kforge/kernel.h>

typedef float v8f __attribute__((vector_size(32)));

#define MR 6   /* rows of C per micro-tile */
#define NR 16  /* columns of C per micro-tile: two 8-float vectors */
#define KC 256 /* depth of one packed block */
#define NC 64  /* columns of B per packed block (a multiple of NR) */

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
 * C[0..mr)[0..nr) (row stride ldc) = (add ? C : 0) + Ap * Bp over kc steps.
 * Ap is kc x MR (k-major), Bp is kc x NR (k-major), both zero-padded, so the
 * kernel always computes a full 6x16 tile and only the store is clipped.
 */
static void micro_kernel(int64_t kc, const float *restrict ap,
			 const float *restrict bp, float *restrict c,
			 int64_t ldc, int mr, int nr, int add)
{
	v8f acc[MR][2];

	for (int r = 0; r < MR; r++)
		acc[r][0] = acc[r][1] = (v8f){0};

	for (int64_t p = 0; p < kc; p++) {
		v8f b0 = load8(bp + p * NR), b1 = load8(bp + p * NR + 8);
		for (int r = 0; r < MR; r++) {
			float a = ap[p * MR + r];
			acc[r][0] += a * b0;
			acc[r][1] += a * b1;
		}
	}
	if (mr == MR && nr == NR) {
		for (int r = 0; r < MR; r++) {
			float *cr = c + r * ldc;
			if (add) {
				acc[r][0] += load8(cr);
				acc[r][1] += load8(cr + 8);
			}
			store8(cr, acc[r][0]);
			store8(cr + 8, acc[r][1]);
		}
		return;
	}
	float tile[MR][NR];
	for (int r = 0; r < MR; r++) {
		store8(tile[r], acc[r][0]);
		store8(tile[r] + 8, acc[r][1]);
	}
	for (int r = 0; r < mr; r++)
		for (int j = 0; j < nr; j++)
			c[r * ldc + j] =
			    add ? c[r * ldc + j] + tile[r][j] : tile[r][j];
}

/* Bp <- B[0..kc)[0..nc) as NR-wide k-major panels, zero-padded to NR. */
static void pack_b(const float *b, int64_t ldb, int64_t kc, int64_t nc,
		   float *restrict bp)
{
	for (int64_t j0 = 0; j0 < nc; j0 += NR) {
		int64_t w = nc - j0 < NR ? nc - j0 : NR;
		for (int64_t p = 0; p < kc; p++) {
			const float *src = b + p * ldb + j0;
			int64_t j;
			for (j = 0; j < w; j++)
				bp[p * NR + j] = src[j];
			for (; j < NR; j++)
				bp[p * NR + j] = 0.0f;
		}
		bp += kc * NR;
	}
}

/* Ap <- A[0..mr)[0..kc) as one k-major MR-row panel, zero-padded to MR. */
static void pack_a(const float *a, int64_t lda, int64_t kc, int mr,
		   float *restrict ap)
{
	for (int64_t p = 0; p < kc; p++) {
		int r;
		for (r = 0; r < mr; r++)
			ap[p * MR + r] = a[r * lda + p];
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
	const float *a = in[0].data, *b = in[1].data;
	float *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	/* 64 KiB + 6 KiB of stack: one packed block of B and one of A */
	float bp[KC * NC] __attribute__((aligned(32)));
	float ap[KC * MR] __attribute__((aligned(32)));

	if (k == 0) {
		memset(c, 0, (size_t)(m * n) * sizeof(*c));
		return 0;
	}
	for (int64_t jc = 0; jc < n; jc += NC) {
		int64_t nc = n - jc < NC ? n - jc : NC;
		for (int64_t pc = 0; pc < k; pc += KC) {
			int64_t kc = k - pc < KC ? k - pc : KC;
			pack_b(b + pc * n + jc, n, kc, nc, bp);
			for (int64_t ic = 0; ic < m; ic += MR) {
				int mr = m - ic < MR ? (int)(m - ic) : MR;
				pack_a(a + ic * k + pc, k, kc, mr, ap);
				for (int64_t j0 = 0; j0 < nc; j0 += NR) {
					int nr =
					    nc - j0 < NR ? (int)(nc - j0) : NR;
					micro_kernel(kc, ap, bp + j0 * kc,
						     c + ic * n + jc + j0, n,
						     mr, nr, pc > 0);
				}
			}
		}
	}
	return 0;
}
