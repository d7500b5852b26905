/* Profile trigger for tasks/linear/matmul_bf16, missed tensor cores: one
 * thread per element of C, products and sums on the CUDA cores in float.
 * Expected: tensor_cores. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void mm_scalar(const uint16_t *a, const uint16_t *b,
				 uint16_t *c, int m, int n, int k)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	int i = blockIdx.y * blockDim.y + threadIdx.y;
	if (i >= m || j >= n)
		return;
	float s = 0.0f;
	for (int t = 0; t < k; t++)
		s += kf_bf16_to_float(a[(long long)i * k + t]) *
		     kf_bf16_to_float(b[(long long)t * n + j]);
	c[(long long)i * n + j] = kf_float_to_bf16(s);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
	mm_scalar<<<grid, block, 0, (cudaStream_t)stream>>>(
	    (const uint16_t *)in[0].data, (const uint16_t *)in[1].data,
	    (uint16_t *)out[0].data, m, n, k);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
