/*
 * A transpose that moves each half through float arithmetic (x + 0):
 * every nonzero value comes back the same, but -0 becomes +0 and a
 * signalling NaN comes back quiet. The task asks for bit-identical
 * outputs; a value comparison cannot see the difference.
 */
#include <stdint.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void transpose(const __half *x, __half *y, long long M,
				 long long N)
{
	for (long long i = blockIdx.y; i < M; i += gridDim.y)
		for (long long j = blockIdx.x * (long long)THREADS +
				   threadIdx.x;
		     j < N; j += (long long)gridDim.x * THREADS)
			y[j * M + i] =
			    __float2half_rn(__half2float(x[i * N + j]) + 0.0f);
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
	    (const __half *)in[0].data, (__half *)out[0].data, M, N);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
