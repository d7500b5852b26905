/*
 * Wrong candidate for indexing/embedding (cuda): warp-per-row gather that
 * reads the int64 indices as int32, so row t takes the low or high word of
 * index t / 2 (always a valid row, but the wrong one).
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define WARPS (THREADS / 32)

__global__ static void gather(const float *table, const int32_t *idx,
			      float *y, long long T, long long D)
{
	int lane = threadIdx.x % 32;
	for (long long t = blockIdx.x * (long long)WARPS + threadIdx.x / 32;
	     t < T; t += (long long)gridDim.x * WARPS) {
		const float *src = table + (long long)idx[t] * D;
		for (long long d = lane; d < D; d += 32)
			y[t * D + d] = src[d];
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long D = in[0].shape[1], T = in[1].shape[0];
	long long blocks = (T + WARPS - 1) / WARPS;

	gather<<<(unsigned)(blocks < 65535 ? blocks : 65535), THREADS, 0,
		 (cudaStream_t)stream>>>(
		(const float *)in[0].data,
		(const int32_t *)in[1].data, /* BUG: int64_t */
		(float *)out[0].data, T, D);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
