/*
 * Wrong candidate for normalization/softmax: normalises over the first
 * dimension (each column of [B, N]) instead of the last, the dim=0 mistake.
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

	for (int64_t j = 0; j < n; j++) {
		float max = x[j];
		for (int64_t b = 1; b < rows; b++)
			if (x[b * n + j] > max)
				max = x[b * n + j];
		double sum = 0.0;
		for (int64_t b = 0; b < rows; b++) {
			y[b * n + j] = expf(x[b * n + j] - max);
			sum += y[b * n + j];
		}
		for (int64_t b = 0; b < rows; b++)
			y[b * n + j] = (float)(y[b * n + j] / sum);
	}
	return 0;
}
