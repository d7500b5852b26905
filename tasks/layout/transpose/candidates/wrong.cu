/*
 * Wrong layout/transpose (cuda): 32 x 32 shared-memory tiles put in their
 * transposed place, but the store reads tile[ty][tx] for tile[tx][ty], so
 * tile contents are not transposed (missing entries read as 0).
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define TILE 32
#define TY 8

__global__ static void transpose_tiled(const uint16_t *x, uint16_t *y,
				       long long M, long long N,
				       long long tiles_n)
{
	__shared__ uint16_t tile[TILE][TILE + 1];
	long long i0 = (long long)(blockIdx.x / tiles_n) * TILE;
	long long j0 = (long long)(blockIdx.x % tiles_n) * TILE;
	int tx = threadIdx.x, ty = threadIdx.y;

	for (int r = ty; r < TILE; r += TY) {
		long long i = i0 + r, j = j0 + tx;
		tile[r][tx] = (i < M && j < N) ? x[i * N + j] : 0;
	}
	__syncthreads();
	for (int r = ty; r < TILE; r += TY) {
		long long jj = j0 + r, i = i0 + tx;
		if (jj < N && i < M)
			y[jj * M + i] = tile[r][tx]; /* BUG: tile[tx][r] */
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long M = in[0].shape[0], N = in[0].shape[1];
	long long tm = (M + TILE - 1) / TILE, tn = (N + TILE - 1) / TILE;

	transpose_tiled<<<(unsigned)(tm * tn), dim3(TILE, TY), 0,
			  (cudaStream_t)stream>>>((const uint16_t *)in[0].data,
						  (uint16_t *)out[0].data, M,
						  N, tn);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
