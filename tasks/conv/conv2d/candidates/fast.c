/*
 * fast.c: conv/conv2d candidate: direct convolution that keeps four output
 * rows (four filters, one row p) in L1 and adds each input row into them
 * with a vectorizable loop over q; padding is handled by clipping q ranges.
 */
#include <kforge/kernel.h>

#define KB 4 /* filters per pass: each input row load feeds KB rows */

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* y0..y3[q] += wj * xs[q] for q in [lo, hi): four filters, one input row. */
static void axpy4(float *restrict y0, float *restrict y1, float *restrict y2,
		  float *restrict y3, const float *restrict xs,
		  const float *wt, int64_t stride, int64_t lo, int64_t hi)
{
	float w0 = wt[0], w1 = wt[stride], w2 = wt[2 * stride];
	float w3 = wt[3 * stride];

	for (int64_t q = lo; q < hi; q++) {
		float v = xs[q];
		y0[q] += w0 * v;
		y1[q] += w1 * v;
		y2[q] += w2 * v;
		y3[q] += w3 * v;
	}
}

static void axpy1(float *restrict y0, const float *restrict xs, float w0,
		  int64_t lo, int64_t hi)
{
	for (int64_t q = lo; q < hi; q++)
		y0[q] += w0 * xs[q];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *x = in[0].data; /* [N, C, H, W] */
	const float *w = in[1].data; /* [K, C, R, S] */
	float *y = out[0].data;      /* [N, K, H, W] */
	int64_t N = in[0].shape[0], C = in[0].shape[1];
	int64_t H = in[0].shape[2], W = in[0].shape[3];
	int64_t K = in[1].shape[0], R = in[1].shape[2], S = in[1].shape[3];
	int64_t ph = (R - 1) / 2, pw = (S - 1) / 2;
	int64_t wk = C * R * S; /* distance between filters in w */

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t n = 0; n < N; n++) {
		const float *xn = x + n * C * H * W;
		for (int64_t k0 = 0; k0 < K; k0 += KB) {
			int64_t kb = min64(KB, K - k0);
			for (int64_t p = 0; p < H; p++) {
				float *yr[KB];
				for (int64_t j = 0; j < kb; j++) {
					yr[j] = y + ((n * K + k0 + j) * H + p) * W;
					memset(yr[j], 0, W * sizeof(float));
				}
				int64_t r0 = max64(0, ph - p);
				int64_t r1 = min64(R, H + ph - p);
				for (int64_t c = 0; c < C; c++) {
					for (int64_t r = r0; r < r1; r++) {
						const float *xr = xn + (c * H + p + r - ph) * W;
						const float *wt = w + k0 * wk + (c * R + r) * S;
						for (int64_t s = 0; s < S; s++) {
							/* y[q] takes x[q + s - pw]: keep it inside the row */
							int64_t lo = max64(0, pw - s);
							int64_t hi = min64(W, W + pw - s);
							const float *xs = xr + s - pw;
							if (kb == KB) {
								axpy4(yr[0], yr[1], yr[2], yr[3], xs, wt + s, wk, lo, hi);
								continue;
							}
							for (int64_t j = 0; j < kb; j++)
								axpy1(yr[j], xs, wt[j * wk + s], lo, hi);
						}
					}
				}
			}
		}
	}
	return 0;
}
