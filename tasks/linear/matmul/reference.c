/*
 * Reference for linear/matmul (host): the textbook triple loop, one dot
 * product per output element, accumulated in double.
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *a = in[0].data, *b = in[1].data;
	float *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];

	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double sum = 0.0;
			for (int64_t p = 0; p < k; p++)
				sum += (double)a[i * k + p] * b[p * n + j];
			c[i * n + j] = (float)sum;
		}
	return 0;
}
