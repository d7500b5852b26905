/*
 * Naive candidate for normalization/softmax: three passes per row (max, sum
 * of exp, exp again divided by the sum), float accumulation.
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
	int64_t rows = in[0].shape[0], n = in[0].shape[1];

	for (int64_t b = 0; b < rows; b++) {
		float max = -INFINITY;
		for (int64_t j = 0; j < n; j++)
			max = fmaxf(max, x[b * n + j]);
		float sum = 0.0f;
		for (int64_t j = 0; j < n; j++)
			sum += expf(x[b * n + j] - max);
		for (int64_t j = 0; j < n; j++)
			y[b * n + j] = expf(x[b * n + j] - max) / sum;
	}
	return 0;
}
