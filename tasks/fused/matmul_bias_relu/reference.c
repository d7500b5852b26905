/*
 * reference.c: fused/matmul_bias_relu on the host backend, the task's ground
 * truth: each y[m, n] = max(0, b[n] + x[m, :] . w[:, n]), summed in double.
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *x = in[0].data; /* [M, K] */
	const float *w = in[1].data; /* [K, N] */
	const float *b = in[2].data; /* [N] */
	float *y = out[0].data;	     /* [M, N] */
	int64_t M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[1];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t m = 0; m < M; m++) {
		for (int64_t n = 0; n < N; n++) {
			double acc = b[n];
			for (int64_t k = 0; k < K; k++)
				acc +=
				    (double)x[m * K + k] * (double)w[k * N + n];
			y[m * N + n] = acc > 0.0 ? (float)acc : 0.0f;
		}
	}
	return 0;
}
