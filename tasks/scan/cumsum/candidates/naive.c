/*
 * naive.c: scan/cumsum candidate, straightforward: the first element of a
 * row is copied, every later one adds the output just before it.
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const double *x = in[0].data; /* [B, N] */
	double *y = out[0].data;      /* [B, N] */
	int64_t B = in[0].shape[0], N = in[0].shape[1];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t b = 0; b < B; b++) {
		const double *xr = x + b * N;
		double *yr = y + b * N;
		yr[0] = xr[0];
		for (int64_t i = 1; i < N; i++)
			yr[i] = yr[i - 1] + xr[i];
	}
	return 0;
}
