/* Profile trigger, tail effect: blocks of 1024 threads (2 per SM) and a
 * grid of 1.1 waves, each block a contiguous equal chunk: the last tenth
 * of a wave runs alone. Expected: tail. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void __launch_bounds__(1024, 2)
    scale_tail(const float *x, float *y, long long n, long long chunk)
{
	long long lo = blockIdx.x * chunk, hi = lo + chunk;
	if (hi > n)
		hi = n;
	for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x)
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
	int dev = 0, sms = 1;
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	long long grid = (long long)(2.2 * sms + 0.999);
	long long chunk = (n + grid - 1) / grid;
	scale_tail<<<(unsigned)grid, 1024, 0, s>>>(x, y, n, chunk);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
