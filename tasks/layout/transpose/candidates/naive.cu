/*
 * Naive candidate for layout/transpose (cuda): one thread per input element,
 * read in order (coalesced), written to its transposed place (strided).
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void transpose(const uint16_t *x, uint16_t *y, long long M,
				 long long N)
{
	for (long long i = blockIdx.y; i < M; i += gridDim.y)
		for (long long j = blockIdx.x * (long long)THREADS +
				   threadIdx.x;
		     j < N; j += (long long)gridDim.x * THREADS)
			y[j * M + i] = x[i * N + j];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long M = in[0].shape[0], N = in[0].shape[1];
	long long bx = (N + THREADS - 1) / THREADS;
	dim3 grid((unsigned)(bx < 65535 ? bx : 65535),
		  (unsigned)(M < 65535 ? M : 65535));

	transpose<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
		(const uint16_t *)in[0].data, (uint16_t *)out[0].data, M, N);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
