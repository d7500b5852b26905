/*
 * Reference for normalization/layernorm (host): per row, a two-pass mean and
 * biased variance in double, then (x - mean) / sqrt(var + 1e-5) * w + b.
 */
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
	const double eps = 1e-5;

	for (int64_t b = 0; b < rows; b++) {
		const float *xr = x + b * n;
		float *yr = y + b * n;
		double mean = 0.0, var = 0.0;
		for (int64_t j = 0; j < n; j++)
			mean += xr[j];
		mean /= (double)n;
		for (int64_t j = 0; j < n; j++)
			var += (xr[j] - mean) * (xr[j] - mean);
		var /= (double)n;
		double rstd = 1.0 / sqrt(var + eps);
		for (int64_t j = 0; j < n; j++)
			yr[j] = (float)((xr[j] - mean) * rstd * w[j] + bias[j]);
	}
	return 0;
}
