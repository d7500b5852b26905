/*
 * An embedding lookup that writes every zero as +0 (a memset of the
 * output, then only the nonzero elements copied): right for every value
 * a comparison of values can tell apart, wrong in the sign of zero, which
 * a bit-identical task must keep.
 */
#include <string.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *table = in[0].data;
	const int64_t *idx = in[1].data;
	float *y = out[0].data;
	int64_t D = in[0].shape[1], T = in[1].shape[0];

	(void)n_in;
	(void)n_out;
	(void)stream;
	memset(y, 0, (size_t)(T * D) * sizeof(float));
	for (int64_t t = 0; t < T; t++)
		for (int64_t d = 0; d < D; d++) {
			float v = table[idx[t] * D + d];
			if (v != 0)
				y[t * D + d] = v;
		}
	return 0;
}
