/*
 * Reference for indexing/embedding (cuda): one thread per output element,
 * y[t, d] = table[idx[t], d].
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

/* grid.y walks the rows t, grid.x and the threads the columns d */
__global__ static void gather(const float *table, const int64_t *idx, float *y,
			      long long T, long long D)
{
	for (long long t = blockIdx.y; t < T; t += gridDim.y) {
		long long row = idx[t];
		for (long long d = blockIdx.x * (long long)THREADS +
				   threadIdx.x;
		     d < D; d += (long long)gridDim.x * THREADS)
			y[t * D + d] = table[row * D + d];
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long D = in[0].shape[1], T = in[1].shape[0];
	long long bx = (D + THREADS - 1) / THREADS;
	dim3 grid((unsigned)(bx < 65535 ? bx : 65535),
		  (unsigned)(T < 65535 ? T : 65535));

	gather<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (const int64_t *)in[1].data,
		(float *)out[0].data, T, D);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
