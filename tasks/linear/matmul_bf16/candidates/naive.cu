/*
 * Naive candidate for linear/matmul_bf16 (cuda): one thread per element of
 * C, bfloat16 widened to float, a float dot product straight from global
 * memory, rounded to bfloat16 once at the end.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void matmul(const uint16_t *a, const uint16_t *b,
			      uint16_t *c, int m, int n, int k)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= n)
		return;
	for (long long i = blockIdx.y * blockDim.y + threadIdx.y; i < m;
	     i += (long long)gridDim.y * blockDim.y) {
		float sum = 0.0f;
		for (int p = 0; p < k; p++)
			sum += kf_bf16_to_float(a[i * k + p]) *
			       kf_bf16_to_float(b[(long long)p * n + j]);
		c[i * n + j] = kf_float_to_bf16(sum);
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	dim3 block(32, 8);
	unsigned gy = (unsigned)((m + 7) / 8);
	dim3 grid((unsigned)((n + 31) / 32), gy > 65535 ? 65535 : gy);
	matmul<<<grid, block, 0, (cudaStream_t)stream>>>(
		(const uint16_t *)in[0].data, (const uint16_t *)in[1].data,
		(uint16_t *)out[0].data, m, n, k);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
