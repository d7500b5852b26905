/*
 * layernorm_scaled_when_timed.c: normalization/layernorm, exact (float64
 * sums) for as many calls as the task has trials (two calls each), then
 * every output 2e-4 too large: twice the 1e-4 bound of float32's L1
 * relative error, well within the tolerance (3e-4 of each value). Under
 * KernelBench's protocol the timed outputs had no precision check and it
 * passed; they are now held to the trials' rules, as under kforge's
 * (rejected/precision).
 */
#include <math.h>

#include <kforge/kernel.h>

/* 70 trials of two calls each (dim sets times distributions). */
#define TRIAL_CALLS 140

static long calls;

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data, *w = in[1].data, *bias = in[2].data;
	float *y = out[0].data;
	int64_t rows = in[0].shape[0], n = in[0].shape[1];
	float scale = ++calls > TRIAL_CALLS ? 1.0002f : 1.0f;

	for (int64_t b = 0; b < rows; b++) {
		const float *xr = x + b * n;
		float *yr = y + b * n;
		double s = 0, q = 0;
		for (int64_t j = 0; j < n; j++)
			s += xr[j];
		double mean = s / (double)n;
		for (int64_t j = 0; j < n; j++)
			q += (xr[j] - mean) * (xr[j] - mean);
		double r = 1.0 / sqrt(q / (double)n + 1e-5);
		for (int64_t j = 0; j < n; j++)
			yr[j] = (float)(((xr[j] - mean) * r * w[j] + bias[j]) *
					scale);
	}
	return 0;
}
