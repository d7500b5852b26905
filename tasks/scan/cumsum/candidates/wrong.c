/*
 * wrong.c: scan/cumsum candidate with a bug kforge must catch: the running
 * sum is not reset between rows, so every row after the first carries the
 * total of the rows before it.
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const double *x = in[0].data; /* [B, N] */
	double *y = out[0].data;      /* [B, N] */
	int64_t B = in[0].shape[0], N = in[0].shape[1];
	double acc = 0.0; /* BUG: belongs inside the row loop */

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t b = 0; b < B; b++) {
		for (int64_t i = 0; i < N; i++) {
			acc += x[b * N + i];
			y[b * N + i] = acc;
		}
	}
	return 0;
}
