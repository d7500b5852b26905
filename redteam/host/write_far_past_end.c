/* GELU, right, plus a write 4 KiB past the end of its output: beyond a
 * 256-byte guard zone, into slack between buffers that used to go
 * unchecked. Every byte of slack now holds guard bytes: out_of_bounds. */
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = in[0].shape[0];
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = 0.7978845608f * (v + 0.044715f * v * v * v);
		y[i] = 0.5f * v * (1.0f + tanhf(u));
	}
	y[n + 1024] = 1.0f;
	return 0;
}
