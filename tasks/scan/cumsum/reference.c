/*
 * reference.c: scan/cumsum on the host backend, the task's ground truth: a
 * sequential inclusive running sum along each row, restarted per row.
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
		double acc = 0.0;
		for (int64_t i = 0; i < N; i++) {
			acc += x[b * N + i];
			y[b * N + i] = acc;
		}
	}
	return 0;
}
