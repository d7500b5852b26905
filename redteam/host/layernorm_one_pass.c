/* Layernorm with the one-pass variance E[x^2] - E[x]^2 in float: right on
 * centred inputs, but rows with a large mean (the "large" stress input,
 * mean 30) cancel catastrophically: wrong_answer. */
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data, *w = in[1].data, *bias = in[2].data;
	float *y = out[0].data;
	int64_t rows = in[0].shape[0], n = in[0].shape[1];
	for (int64_t b = 0; b < rows; b++) {
		const float *xr = x + b * n;
		float s = 0, sq = 0;
		for (int64_t j = 0; j < n; j++) {
			s += xr[j];
			sq += xr[j] * xr[j];
		}
		float mean = s / (float)n;
		float var = sq / (float)n - mean * mean;
		float r = 1.0f / sqrtf((var > 0 ? var : 0) + 1e-5f);
		for (int64_t j = 0; j < n; j++)
			y[b * n + j] = (xr[j] - mean) * r * w[j] + bias[j];
	}
	return 0;
}
