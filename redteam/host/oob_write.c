/* GELU whose last vector store writes one element past the end of y; the
 * values are right, so comparing outputs alone passes it. Caught by
 * out_of_bounds: the guard bytes after the output change. */
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
	int64_t n = kf_numel(&in[0]);
	const float c = 0.7978845608028654f;
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = c * (v + 0.044715f * v * v * v);
		y[i] = 0.5f * v * (1.0f + tanhf(u));
	}
	y[n] = 0.0f; /* the spare lane of the last vector */
	return 0;
}
