/*
 * reference.c: conv/conv2d on the host backend, the task's ground truth:
 * direct 'same'-padded stride-1 convolution, one output element at a time,
 * accumulated in double.
 */
#include <kforge/kernel.h>

struct conv {
	int64_t N, C, H, W; /* input x [N, C, H, W]; output y [N, K, H, W] */
	int64_t K, R, S;    /* weight w [K, C, R, S], R and S odd */
};

/* y[n, k, p, q]: the sum over c, r, s of the product of the weight and the
 * input under it; input taps outside the image are zero. */
static double conv_at(const struct conv *d, const float *x, const float *w,
		      int64_t n, int64_t k, int64_t p, int64_t q)
{
	int64_t pad_h = (d->R - 1) / 2, pad_w = (d->S - 1) / 2;
	double acc = 0.0;

	for (int64_t c = 0; c < d->C; c++) {
		for (int64_t r = 0; r < d->R; r++) {
			for (int64_t s = 0; s < d->S; s++) {
				int64_t h = p + r - pad_h, v = q + s - pad_w;
				if (h < 0 || h >= d->H || v < 0 || v >= d->W)
					continue;
				int64_t xi =
				    ((n * d->C + c) * d->H + h) * d->W + v;
				int64_t wi =
				    ((k * d->C + c) * d->R + r) * d->S + s;
				acc += (double)x[xi] * (double)w[wi];
			}
		}
	}
	return acc;
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
	for (int64_t n = 0; n < d.N; n++)
		for (int64_t k = 0; k < d.K; k++)
			for (int64_t p = 0; p < d.H; p++)
				for (int64_t q = 0; q < d.W; q++)
					*y++ = (float)conv_at(&d, x, w, n, k, p,
							      q);
	return 0;
}
