/*
 * Reference for activation/gelu (host): the textbook tanh-approximation GELU,
 * one element at a time with libm's tanhf.
 */
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = kf_numel(&in[0]);
	const float k = 0.7978845608028654f; /* sqrt(2/pi) */

	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = k * (v + 0.044715f * v * v * v);
		y[i] = 0.5f * v * (1.0f + tanhf(u));
	}
	return 0;
}
