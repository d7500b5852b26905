/*
 * tunable.c: layout/transpose candidate for the tuner (host): the matrix is
 * walked in BI x BJ blocks so that the lines a block reads and writes stay
 * in cache; inside a block the walk goes along the output's rows (writes
 * contiguous), the reads striding down a column of the block. The
 * rule keeps a block's input and output (2 bytes an element each) within
 * 64 KiB, about what a core's L2 keeps beside everything else.
 */
#include <kforge/kernel.h>

KF_PARAM(BI, 8, 32, 128, 512)
KF_PARAM(BJ, 8, 32, 128, 512)
KF_PARAM_RULE(BI * BJ * 4 <= 65536)

#ifndef BI
#define BI 32
#endif
#ifndef BJ
#define BJ 32
#endif

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const uint16_t *x = in[0].data; /* [M, N] half */
	uint16_t *y = out[0].data;	/* [N, M] half */
	int64_t M = in[0].shape[0], N = in[0].shape[1];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t i0 = 0; i0 < M; i0 += BI) {
		int64_t i1 = i0 + BI < M ? i0 + BI : M;
		for (int64_t j0 = 0; j0 < N; j0 += BJ) {
			int64_t j1 = j0 + BJ < N ? j0 + BJ : N;
			for (int64_t j = j0; j < j1; j++)
				for (int64_t i = i0; i < i1; i++)
					y[j * M + i] = x[i * N + j];
		}
	}
	return 0;
}
