/*
 * Naive candidate for activation/gelu: the same formula rewritten through
 * 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)), one libm expf per element.
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

	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = 0.7978845608f * (v + 0.044715f * v * v * v);
		y[i] = v / (1.0f + expf(-2.0f * u));
	}
	return 0;
}
