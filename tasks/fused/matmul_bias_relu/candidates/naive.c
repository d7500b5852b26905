/*
 * naive.c: fused/matmul_bias_relu candidate, straightforward: a float dot
 * product per output element, then the bias and the ReLU.
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
			float acc = 0.0f;
			for (int64_t k = 0; k < K; k++)
				acc += x[m * K + k] * w[k * N + n];
			acc += b[n];
			y[m * N + n] = acc > 0.0f ? acc : 0.0f;
		}
	}
	return 0;
}
