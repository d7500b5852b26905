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

/* y0..y3[q] += wj * xr[q + off] for q in [lo, hi): four filters whose taps
 * are wt[0], wt[stride], ..., one input row. */
static void axpy4(float *restrict y0, float *restrict y1, float *restrict y2,
		  float *restrict y3, const float *restrict xr, int64_t off,
		  const float *wt, int64_t stride, int64_t lo, int64_t hi)
{
	float w0 = wt[0], w1 = wt[stride], w2 = wt[2 * stride];
	float w3 = wt[3 * stride];

	for (int64_t q = lo; q < hi; q++) {
		float v = xr[q + off];
		y0[q] += w0 * v;
		y1[q] += w1 * v;
		y2[q] += w2 * v;
		y3[q] += w3 * v;
	}
}

static void axpy1(float *restrict y0, const float *restrict xr, int64_t off,
		  float w0, int64_t lo, int64_t hi)
{
	for (int64_t q = lo; q < hi; q++)
		y0[q] += w0 * xr[q + off];
}

/* Shapes: x [N, C, H, W], w [K, C, R, S], y [N, K, H, W]. */
struct conv {
	int64_t N, C, H, W, K, R, S;
};

/* Output row p of filters k0 .. k0 + kb (kb <= KB) of image xn into yn
 * (image n of y): zero the rows, then add every (c, r, s) tap of the
 * filters times the input row it reads, shifted by s. */
static void out_rows(const struct conv *d, const float *xn, const float *w,
		     float *yn, int64_t k0, int64_t kb, int64_t p)
{
	int64_t ph = (d->R - 1) / 2, pw = (d->S - 1) / 2;
	int64_t wk = d->C * d->R * d->S; /* distance between filters in w */
	/* taps r whose input row p + r - ph exists */
	int64_t r0 = max64(0, ph - p), r1 = min64(d->R, d->H + ph - p);
	float *yr[KB];

	for (int64_t j = 0; j < kb; j++) {
		yr[j] = yn + ((k0 + j) * d->H + p) * d->W;
		memset(yr[j], 0, d->W * sizeof(float));
	}
	for (int64_t c = 0; c < d->C; c++) {
		for (int64_t r = r0; r < r1; r++) {
			const float *xr = xn + (c * d->H + p + r - ph) * d->W;
			const float *wt = w + k0 * wk + (c * d->R + r) * d->S;
			for (int64_t s = 0; s < d->S; s++) {
				/* y[q] takes x[q + s - pw]: stay in the row */
				int64_t lo = max64(0, pw - s);
				int64_t hi = min64(d->W, d->W + pw - s);
				if (kb == KB) {
					axpy4(yr[0], yr[1], yr[2], yr[3], xr,
					      s - pw, wt + s, wk, lo, hi);
					continue;
				}
				for (int64_t j = 0; j < kb; j++)
					axpy1(yr[j], xr, s - pw, wt[j * wk + s],
					      lo, hi);
			}
		}
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *x = in[0].data;
	const float *w = in[1].data;
	float *y = out[0].data;
	struct conv d = {
	    .N = in[0].shape[0],
	    .C = in[0].shape[1],
	    .H = in[0].shape[2],
	    .W = in[0].shape[3],
	    .K = in[1].shape[0],
	    .R = in[1].shape[2],
	    .S = in[1].shape[3],
	};

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t n = 0; n < d.N; n++) {
		const float *xn = x + n * d.C * d.H * d.W;
		float *yn = y + n * d.K * d.H * d.W;
		for (int64_t k0 = 0; k0 < d.K; k0 += KB)
			for (int64_t p = 0; p < d.H; p++)
				out_rows(&d, xn, w, yn, k0, min64(KB, d.K - k0),
					 p);
	}
	return 0;
}
