/*
 * Naive candidate for normalization/softmax (cuda): one block per row, three
 * passes over global memory (max, sum of expf, expf again divided by the
 * sum), float tree reductions in shared memory.
 */
#include <math.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void softmax(const float *x, float *y, long long n)
{
	__shared__ float red[THREADS];
	const float *xr = x + blockIdx.x * n;
	float *yr = y + blockIdx.x * n;
	int t = threadIdx.x;

	float max = -INFINITY;
	for (long long j = t; j < n; j += THREADS)
		max = fmaxf(max, xr[j]);
	red[t] = max;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s /= 2) {
		if (t < s)
			red[t] = fmaxf(red[t], red[t + s]);
		__syncthreads();
	}
	max = red[0];
	__syncthreads(); /* everyone has read red[0] before it is reused */

	float sum = 0.0f;
	for (long long j = t; j < n; j += THREADS)
		sum += expf(xr[j] - max);
	red[t] = sum;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s /= 2) {
		if (t < s)
			red[t] += red[t + s];
		__syncthreads();
	}
	sum = red[0];

	for (long long j = t; j < n; j += THREADS)
		yr[j] = expf(xr[j] - max) / sum;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	softmax<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
