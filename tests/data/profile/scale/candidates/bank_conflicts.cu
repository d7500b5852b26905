/* Profile trigger, bank conflicts: each thread stages its value at
 * buf[threadIdx.x * 32], so all 32 threads of a warp hit bank 0.
 * Expected: bank_conflicts. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void scale_banks(const float *x, float *y, long long n)
{
	__shared__ float buf[256 * 32];
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	buf[threadIdx.x * 32] = i < n ? x[i] : 0.0f;
	__syncthreads();
	if (i < n)
		y[i] = 2.0f * buf[threadIdx.x * 32];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long n = kf_numel(&in[0]);
	const float *x = (const float *)in[0].data;
	float *y = (float *)out[0].data;
	cudaStream_t s = (cudaStream_t)stream;
	if (n == 0)
		return 0;
	scale_banks<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
