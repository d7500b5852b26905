/*
 * wrong.c: fused/matmul_bias_relu candidate with an epilogue-order bug kforge
 * must catch: it applies the ReLU before adding the bias, relu(x @ w) + b,
 * so outputs with a negative sum or bias are wrong.
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
			/* BUG: ReLU first, then the bias */
			y[m * N + n] = (acc > 0.0f ? acc : 0.0f) + b[n];
		}
	}
	return 0;
}
