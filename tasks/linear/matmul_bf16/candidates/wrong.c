/*
 * Wrong candidate for linear/matmul_bf16: the running sum is kept in
 * bfloat16 (rounded after every add) instead of float32, so long dot
 * products lose most of their precision.
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const uint16_t *a = in[0].data, *b = in[1].data;
	uint16_t *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];

	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			uint16_t sum = 0; /* bfloat16 +0 */
			for (int64_t p = 0; p < k; p++)
				sum = kf_float_to_bf16(
				    kf_bf16_to_float(sum) +
				    kf_bf16_to_float(a[i * k + p]) *
					kf_bf16_to_float(b[p * n + j]));
			c[i * n + j] = sum;
		}
	return 0;
}
