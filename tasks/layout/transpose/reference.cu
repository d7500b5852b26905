/*
 * Reference for layout/transpose (cuda): one thread per output element,
 * y[j, i] = x[i, j] copied as raw 16-bit patterns (coalesced writes).
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

/* grid.y walks the output rows j, grid.x and the threads the columns i */
__global__ static void transpose(const uint16_t *x, uint16_t *y, long long M,
				 long long N)
{
	for (long long j = blockIdx.y; j < N; j += gridDim.y)
		for (long long i = blockIdx.x * (long long)THREADS +
				   threadIdx.x;
		     i < M; i += (long long)gridDim.x * THREADS)
			y[j * M + i] = x[i * N + j];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long M = in[0].shape[0], N = in[0].shape[1];
	long long bx = (M + THREADS - 1) / THREADS;
	dim3 grid((unsigned)(bx < 65535 ? bx : 65535),
		  (unsigned)(N < 65535 ? N : 65535));

	transpose<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
		(const uint16_t *)in[0].data, (uint16_t *)out[0].data, M, N);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
