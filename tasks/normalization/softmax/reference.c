/*
 * Reference for normalization/softmax (host): per row, subtract the max, take
 * libm expf, sum in double, divide.
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
		const float *xr = x + b * n;
		float *yr = y + b * n;
		float max = xr[0];
		for (int64_t j = 1; j < n; j++)
			if (xr[j] > max)
				max = xr[j];
		double sum = 0.0;
		for (int64_t j = 0; j < n; j++) {
			yr[j] = expf(xr[j] - max);
			sum += yr[j];
		}
		for (int64_t j = 0; j < n; j++)
			yr[j] = (float)(yr[j] / sum);
	}
	return 0;
}
