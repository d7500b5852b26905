/*
 * honest_layernorm_pairwise.c: normalization/layernorm in float32 with
 * another order of summation than the reference's float64 one: each row's
 * mean and variance summed pairwise over blocks of 16 (two passes), then
 * 1/sqrtf. Its error is float32 rounding alone, a few times the
 * reference's own noise on every kind of input, trials, timed calls and
 * check calls alike: ok, under kforge's protocol and KernelBench's.
 */
#include <math.h>

#include <kforge/kernel.h>

/* Pairwise sum of f(x[j]) over [0, n): x itself, or (x - c)^2. */
static float pairwise(const float *x, int64_t n, int squares, float c)
{
	if (n <= 16) {
		float s = 0;
		for (int64_t j = 0; j < n; j++) {
			float d = x[j] - c;
			s += squares ? d * d : x[j];
		}
		return s;
	}
	int64_t h = n / 2;
	return pairwise(x, h, squares, c) + pairwise(x + h, n - h, squares, c);
}

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
		float *yr = y + b * n;
		float mean = pairwise(xr, n, 0, 0) / (float)n;
		float var = pairwise(xr, n, 1, mean) / (float)n;
		float r = 1.0f / sqrtf(var + 1e-5f);
		for (int64_t j = 0; j < n; j++)
			yr[j] = (xr[j] - mean) * r * w[j] + bias[j];
	}
	return 0;
}
