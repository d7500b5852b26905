/* Honest row sum in another order: a float pairwise tree (blocks of 16).
 * It must pass the precision check of trials and timed outputs alike. */
#include <kforge/kernel.h>

static float pairwise(const float *x, int64_t n)
{
	if (n <= 16) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[j];
		return s;
	}
	int64_t h = n / 2;
	return pairwise(x, h) + pairwise(x + h, n - h);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++)
		y[i] = pairwise(x + i * n, n);
	return 0;
}
