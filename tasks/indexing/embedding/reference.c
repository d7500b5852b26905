/*
 * reference.c: indexing/embedding on the host backend, the task's ground
 * truth: y[t, d] = table[idx[t], d], one element at a time.
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *table = in[0].data; /* [V, D] */
	const int64_t *idx = in[1].data; /* [T], each in [0, V) */
	float *y = out[0].data;		 /* [T, D] */
	int64_t D = in[0].shape[1], T = in[1].shape[0];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t t = 0; t < T; t++)
		for (int64_t d = 0; d < D; d++)
			y[t * D + d] = table[idx[t] * D + d];
	return 0;
}
