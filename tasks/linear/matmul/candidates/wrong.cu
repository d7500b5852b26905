/*
 * Wrong candidate for linear/matmul (cuda): a 16x16 shared-memory tiled
 * kernel whose K loop counts K / 16 tiles (truncated) instead of
 * cdiv(K, 16), so the last K % 16 terms of every dot product are dropped
 * (all of them when K < 16).
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define T 16

__global__ static void matmul(const float *a, const float *b, float *c,
			      int m, int n, int k)
{
	__shared__ float as[T][T], bs[T][T + 1];
	int tx = threadIdx.x, ty = threadIdx.y;
	long long i = blockIdx.y * (long long)T + ty;
	int j = blockIdx.x * T + tx;
	float sum = 0.0f;

	for (int t = 0; t < k / T; t++) { /* bug: (k + T - 1) / T */
		int p = t * T;
		as[ty][tx] = i < m ? a[i * k + p + tx] : 0.0f;
		bs[ty][tx] = j < n ? b[(long long)(p + ty) * n + j] : 0.0f;
		__syncthreads();
		for (int q = 0; q < T; q++)
			sum += as[ty][q] * bs[q][tx];
		__syncthreads();
	}
	if (i < m && j < n)
		c[i * n + j] = sum;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	dim3 grid((unsigned)((n + T - 1) / T), (unsigned)((m + T - 1) / T));
	matmul<<<grid, dim3(T, T), 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (const float *)in[1].data,
		(float *)out[0].data, m, n, k);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
