/*
 * naive.c: indexing/embedding candidate, straightforward: one memcpy of a
 * table row per index.
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
		memcpy(y + t * D, table + idx[t] * D, D * sizeof(float));
	return 0;
}
