/*
 * Naive candidate for fused/matmul_bias_relu (cuda): one thread per output,
 * a float dot product straight from global memory, then the bias and ReLU.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

/* grid.y walks the rows m, grid.x and the threads the columns n */
__global__ static void mm_bias_relu(const float *x, const float *w,
				    const float *b, float *y, long long M,
				    long long K, long long N)
{
	for (long long m = blockIdx.y; m < M; m += gridDim.y) {
		long long n0 = blockIdx.x * (long long)THREADS + threadIdx.x;
		long long step = (long long)gridDim.x * THREADS;
		for (long long n = n0; n < N; n += step) {
			float acc = 0.0f;
			for (long long k = 0; k < K; k++)
				acc += x[m * K + k] * w[k * N + n];
			acc += b[n];
			y[m * N + n] = acc > 0.0f ? acc : 0.0f;
		}
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[1];
	long long bx = (N + THREADS - 1) / THREADS;
	dim3 grid((unsigned)(bx < 65535 ? bx : 65535),
		  (unsigned)(M < 65535 ? M : 65535));

	mm_bias_relu<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (const float *)in[1].data,
		(const float *)in[2].data, (float *)out[0].data, M, K, N);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
