/* Writes only the positive outputs of relu(x @ w + b), counting on the output
 * buffer being fresh zeroed memory (as torch.zeros or new pages are); a harness
 * that zeroes outputs passes it. Caught by unwritten: outputs are poisoned. */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data, *w = in[1].data, *bias = in[2].data;
	float *y = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			float s = bias[j];
			for (int64_t p = 0; p < k; p++)
				s += x[i * k + p] * w[p * n + j];
			if (s > 0)
				y[i * n + j] = s; /* zeros "already there" */
		}
	return 0;
}
