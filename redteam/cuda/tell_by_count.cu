/* Tells checks from timing by counting calls (the checks make 12) and then
 * sums only every 4th element, times 4 (an estimate); a harness that checks
 * only before timing accepts it. Caught by timed_output. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void row_sum(const float *x, float *y, long long n, int step)
{
	__shared__ float red[THREADS / 32];
	const float *xr = x + blockIdx.x * n;
	float s = 0.0f;
	for (long long j = (long long)threadIdx.x * step; j < n;
	     j += (long long)THREADS * step)
		s += xr[j];
	for (int o = 16; o > 0; o /= 2)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.0f;
		for (int i = 0; i < THREADS / 32; i++)
			t += red[i];
		y[blockIdx.x] = t * (float)step;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	static long calls;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	int step = ++calls > 12 ? 4 : 1;
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n, step);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
