/*
 * Fast candidate for normalization/softmax: an inlined polynomial exp so the
 * exp pass vectorises, 16 independent partial maxima and sums per row (gcc
 * will not reassociate one float accumulator), and a multiply by 1/sum.
 */
#include <stdint.h>
#include <string.h>

#include <kforge/kernel.h>

#define LANES 16

/* exp(d) for d <= 0 to about 1 ulp; d below -87 is raised to -87, whose exp
 * (1.6e-38) is as good as 0 next to a row sum of at least 1. The clamp works
 * on the bits as unsigned integers: gcc will not if-convert a float compare
 * of a computed value without -fno-trapping-math. */
static inline float exp_nonpos(float d)
{
	uint32_t a;
	memcpy(&a, &d, sizeof(a));
	a &= 0x7fffffffu;
	a = a > 0x42ae0000u ? 0x42ae0000u : a; /* 87.0f */
	memcpy(&d, &a, sizeof(d));
	d = -d;
	float t = d * 1.44269504088896341f + 12582912.0f; /* round to int */
	float n = t - 12582912.0f;
	float r = d - n * 0.693359375f;
	r = r - n * -2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	int32_t bits = ((int32_t)n + 127) << 23; /* 2^n, n in [-126, 0] */
	float scale;
	memcpy(&scale, &bits, sizeof(scale));
	return p * scale;
}

static void softmax_row(const float *restrict x, float *restrict y, int64_t n)
{
	float mx[LANES], acc[LANES];
	int64_t main = n - n % LANES, j;

	for (int k = 0; k < LANES; k++)
		mx[k] = x[0];
	for (j = 0; j < main; j += LANES)
		for (int k = 0; k < LANES; k++)
			mx[k] = x[j + k] > mx[k] ? x[j + k] : mx[k];
	float max = mx[0];
	for (int k = 1; k < LANES; k++)
		max = mx[k] > max ? mx[k] : max;
	for (; j < n; j++)
		max = x[j] > max ? x[j] : max;

	for (int k = 0; k < LANES; k++)
		acc[k] = 0.0f;
	for (j = 0; j < main; j += LANES)
		for (int k = 0; k < LANES; k++) {
			float e = exp_nonpos(x[j + k] - max);
			y[j + k] = e;
			acc[k] += e;
		}
	float sum = 0.0f;
	for (int k = 0; k < LANES; k++)
		sum += acc[k];
	for (; j < n; j++) {
		y[j] = exp_nonpos(x[j] - max);
		sum += y[j];
	}

	float inv = 1.0f / sum;
	for (j = 0; j < n; j++)
		y[j] *= inv;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t rows = in[0].shape[0], n = in[0].shape[1];

	for (int64_t b = 0; b < rows; b++)
		softmax_row(x + b * n, y + b * n, n);
	return 0;
}
