/*
 * reference.c: layout/transpose on the host backend, the task's ground
 * truth: y[j, i] = x[i, j], one element at a time, copied as raw bits.
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const uint16_t *x = in[0].data; /* [M, N] half */
	uint16_t *y = out[0].data;	/* [N, M] half */
	int64_t M = in[0].shape[0], N = in[0].shape[1];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++)
			y[j * M + i] = x[i * N + j];
	return 0;
}
