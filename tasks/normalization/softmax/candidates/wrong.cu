/*
 * Wrong candidate for normalization/softmax (cuda): one warp per row; the
 * sum is reduced with __shfl_down_sync, which leaves the total in lane 0
 * only, but every lane divides by its own value (never broadcast).
 */
#include <math.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define FULL 0xffffffffu

__global__ static void softmax(const float *x, float *y, long long rows,
			       long long n)
{
	long long row = blockIdx.x * (long long)(THREADS / 32) +
			threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (row >= rows)
		return;
	const float *xr = x + row * n;
	float *yr = y + row * n;

	float max = -INFINITY;
	for (long long j = lane; j < n; j += 32)
		max = fmaxf(max, xr[j]);
	for (int o = 16; o > 0; o /= 2)
		max = fmaxf(max, __shfl_xor_sync(FULL, max, o));

	float sum = 0.0f;
	for (long long j = lane; j < n; j += 32)
		sum += expf(xr[j] - max);
	for (int o = 16; o > 0; o /= 2)
		sum += __shfl_down_sync(FULL, sum, o);
	/* bug: sum = __shfl_sync(FULL, sum, 0) is missing */

	for (long long j = lane; j < n; j += 32)
		yr[j] = expf(xr[j] - max) / sum;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	long long per = THREADS / 32;
	softmax<<<(unsigned)((rows + per - 1) / per), THREADS, 0,
		  (cudaStream_t)stream>>>((const float *)in[0].data,
					  (float *)out[0].data, rows, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
