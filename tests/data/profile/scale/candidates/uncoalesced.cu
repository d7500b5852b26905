/* Profile trigger, uncoalesced: consecutive threads touch elements n/32
 * apart (a transposed index), so every thread of a warp needs a sector of
 * its own. Expected: uncoalesced. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void scale_strided(const float *x, float *y, long long n)
{
	long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (t >= n)
		return;
	long long e = t;
	if (n % 32 == 0)
		e = (t % 32) * (n / 32) + t / 32;
	y[e] = 2.0f * x[e];
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
	scale_strided<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
