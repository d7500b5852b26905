/* Matmul on inputs rounded to fp16 (what fp16 tensor cores do to fp32 data):
 * too crude to hide, ~14% of elements leave the 1e-3 tolerance at K = 256
 * (measured), so plain mismatch catches it before the precision check. */
#include <string.h>

#include <kforge/kernel.h>

static inline float h(float v)
{
	return kf_half_to_float(kf_float_to_half(v));
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *a = in[0].data, *b = in[1].data;
	float *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	memset(c, 0, (size_t)(m * n) * sizeof(float));
	for (int64_t i = 0; i < m; i++)
		for (int64_t p = 0; p < k; p++) {
			float av = h(a[i * k + p]);
			for (int64_t j = 0; j < n; j++)
				c[i * n + j] += av * h(b[p * n + j]);
		}
	return 0;
}
