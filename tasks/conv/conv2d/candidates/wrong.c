/*
 * wrong.c: conv/conv2d candidate with a fencepost bug kforge must catch: the
 * window is clipped one column short on the right, so the last input column
 * never contributes (outputs near the right edge are wrong).
 */
#include <kforge/kernel.h>

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* One output element. xn: image n [C, H, W]; wk: filter k [C, R, S]. */
static float window(const float *xn, const float *wk, int64_t C, int64_t H,
		    int64_t W, int64_t R, int64_t S, int64_t p, int64_t q)
{
	int64_t ph = (R - 1) / 2, pw = (S - 1) / 2;
	int64_t r0 = max64(0, ph - p), r1 = min64(R, H + ph - p);
	/* BUG: should be W + pw - q; input column W - 1 is dropped */
	int64_t s0 = max64(0, pw - q), s1 = min64(S, W - 1 + pw - q);
	float acc = 0.0f;

	for (int64_t c = 0; c < C; c++)
		for (int64_t r = r0; r < r1; r++)
			for (int64_t s = s0; s < s1; s++)
				acc +=
				    xn[(c * H + p + r - ph) * W + q + s - pw] *
				    wk[(c * R + r) * S + s];
	return acc;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *x = in[0].data; /* [N, C, H, W] */
	const float *w = in[1].data; /* [K, C, R, S] */
	float *y = out[0].data;	     /* [N, K, H, W] */
	int64_t N = in[0].shape[0], C = in[0].shape[1];
	int64_t H = in[0].shape[2], W = in[0].shape[3];
	int64_t K = in[1].shape[0], R = in[1].shape[2], S = in[1].shape[3];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++)
			for (int64_t p = 0; p < H; p++)
				for (int64_t q = 0; q < W; q++)
					*y++ = window(x + n * C * H * W,
						      w + k * C * R * S, C, H,
						      W, R, S, p, q);
	return 0;
}
