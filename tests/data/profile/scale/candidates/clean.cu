/* Profile trigger, clean: coalesced, one element per thread, 256 threads a
 * block, a grid of many waves. No analyser should fire. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void scale_clean(const float *x, float *y, long long n)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = 2.0f * x[i];
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
	scale_clean<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
