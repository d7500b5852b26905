/*
 * Wrong candidate for reduction/row_sum: the loop stops one column early
 * (j < n - 1), so the last element of every row is left out.
 */
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
		double sum = 0.0;
		for (int64_t j = 0; j < n - 1; j++)
			sum += x[b * n + j];
		y[b] = (float)sum;
	}
	return 0;
}
