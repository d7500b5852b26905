/*
 * wrong.c: indexing/embedding candidate with a dtype bug kforge must catch:
 * it reads the int64 indices as int32, so row t takes the low or high half
 * of index t / 2 (still inside the table, but the wrong row).
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *table = in[0].data; /* [V, D] */
	const int32_t *idx = in[1].data; /* BUG: the indices are int64_t */
	float *y = out[0].data;		 /* [T, D] */
	int64_t D = in[0].shape[1], T = in[1].shape[0];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t t = 0; t < T; t++)
		memcpy(y + t * D, table + (int64_t)idx[t] * D,
		       D * sizeof(float));
	return 0;
}
