/*
 * Reference for normalization/softmax (cuda): one block per row; the max,
 * then expf(x - max) stored and summed in double (a fixed tree in shared
 * memory), then each stored value divided by the sum in double.
 */
#include <math.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void __launch_bounds__(THREADS)
softmax(const float *x, float *y, long long n)
{
	__shared__ float smax[THREADS];
	__shared__ double ssum[THREADS];
	const float *xr = x + blockIdx.x * n;
	float *yr = y + blockIdx.x * n;
	int t = threadIdx.x;

	float max = -INFINITY;
	for (long long j = t; j < n; j += THREADS)
		max = fmaxf(max, xr[j]);
	smax[t] = max;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s /= 2) {
		if (t < s)
			smax[t] = fmaxf(smax[t], smax[t + s]);
		__syncthreads();
	}
	max = smax[0];

	double sum = 0.0;
	for (long long j = t; j < n; j += THREADS) {
		float e = expf(xr[j] - max);
		yr[j] = e;
		sum += e;
	}
	ssum[t] = sum;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s /= 2) {
		if (t < s)
			ssum[t] += ssum[t + s];
		__syncthreads();
	}
	sum = ssum[0];

	for (long long j = t; j < n; j += THREADS)
		yr[j] = (float)(yr[j] / sum);
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
