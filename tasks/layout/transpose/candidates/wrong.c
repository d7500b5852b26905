/*
 * wrong.c: layout/transpose candidate with a bug kforge must catch: it moves
 * 8 x 8 tiles to their transposed place but copies each tile's contents
 * without transposing them; ragged edges take a correct element loop.
 */
#include <kforge/kernel.h>

#define T 8

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const uint16_t *x = in[0].data; /* [M, N] half */
	uint16_t *y = out[0].data;	/* [N, M] half */
	int64_t M = in[0].shape[0], N = in[0].shape[1];
	int64_t Mt = M - M % T, Nt = N - N % T; /* extent of whole tiles */

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t i0 = 0; i0 < Mt; i0 += T)
		for (int64_t j0 = 0; j0 < Nt; j0 += T)
			for (int64_t r = 0; r < T; r++)
				for (int64_t c = 0; c < T; c++)
					/* BUG: y[(j0 + c) * M + i0 + r] */
					y[(j0 + r) * M + i0 + c] =
					    x[(i0 + r) * N + j0 + c];
	for (int64_t i = 0; i < M; i++) /* right edge: columns Nt.. */
		for (int64_t j = Nt; j < N; j++)
			y[j * M + i] = x[i * N + j];
	for (int64_t i = Mt; i < M; i++) /* bottom edge: rows Mt.. */
		for (int64_t j = 0; j < Nt; j++)
			y[j * M + i] = x[i * N + j];
	return 0;
}
