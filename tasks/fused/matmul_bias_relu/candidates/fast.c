/*
 * fast.c: fused/matmul_bias_relu candidate: register-tiled matmul. A 6 x 16
 * tile of y lives in registers (twelve 8-float vectors) while k runs, reading
 * w rows contiguously; bias and ReLU are applied as the tile is stored.
 */
#include <kforge/kernel.h>

#define MR 6  /* rows of x per tile */
#define NR 16 /* columns of w per tile: two 8-float vectors */

/* GNU C vector of 8 floats; unaligned, may alias float */
typedef float v8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t v8i __attribute__((vector_size(32)));

/* max(v, 0) lane by lane: keep the bits of lanes where v > 0 */
static v8 relu8(v8 v)
{
	v8 zero = {0};
	return (v8)((v8i)v & (v > zero));
}

/* Tile y[0..mr)[0..NR) of the block at x, w, y (leading dims K, N); mr <=
 * MR is a constant at each call, so the row loops unroll into registers. */
static inline __attribute__((always_inline)) void
tile(int mr, const float *restrict x, const float *restrict w,
     const float *restrict b, float *restrict y, int64_t K, int64_t N)
{
	v8 acc[MR][2] = {{{0}}};

	for (int64_t k = 0; k < K; k++) {
		v8 w0 = *(const v8 *)(w + k * N);
		v8 w1 = *(const v8 *)(w + k * N + 8);
		for (int i = 0; i < mr; i++) {
			float a = x[i * K + k];
			acc[i][0] += a * w0;
			acc[i][1] += a * w1;
		}
	}
	v8 b0 = *(const v8 *)b, b1 = *(const v8 *)(b + 8);
	for (int i = 0; i < mr; i++) {
		*(v8 *)(y + i * N) = relu8(acc[i][0] + b0);
		*(v8 *)(y + i * N + 8) = relu8(acc[i][1] + b1);
	}
}

/* The last nr < NR columns, all mr rows, element by element. */
static void edge(const float *x, const float *w, const float *b, float *y,
		 int64_t K, int64_t N, int64_t mr, int64_t nr)
{
	for (int64_t i = 0; i < mr; i++) {
		for (int64_t j = 0; j < nr; j++) {
			float acc = 0.0f;
			for (int64_t k = 0; k < K; k++)
				acc += x[i * K + k] * w[k * N + j];
			acc += b[j];
			y[i * N + j] = acc > 0.0f ? acc : 0.0f;
		}
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *x = in[0].data; /* [M, K] */
	const float *w = in[1].data; /* [K, N] */
	const float *b = in[2].data; /* [N] */
	float *y = out[0].data;	     /* [M, N] */
	int64_t M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[1];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t n0 = 0; n0 < N; n0 += NR) {
		const float *wn = w + n0, *bn = b + n0;
		int64_t nr = N - n0 < NR ? N - n0 : NR, m = 0;
		if (nr < NR) {
			edge(x, wn, bn, y + n0, K, N, M, nr);
			continue;
		}
		for (; m + MR <= M; m += MR)
			tile(MR, x + m * K, wn, bn, y + m * N + n0, K, N);
		for (; m < M; m++) /* rows left over: one at a time */
			tile(1, x + m * K, wn, bn, y + m * N + n0, K, N);
	}
	return 0;
}
