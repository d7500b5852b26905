/*
 * Wrong candidate for normalization/layernorm (cuda): the variance is the
 * mean of x^2 (RMSNorm's statistic), the mean never subtracted from it, so
 * rows whose mean is not ~0 (all of them, a little; mean-10 rows, a lot)
 * are scaled wrongly.
 */
#include <math.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__device__ static float block_sum(float v, float *red)
{
	int t = threadIdx.x;
	red[t] = v;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s /= 2) {
		if (t < s)
			red[t] += red[t + s];
		__syncthreads();
	}
	v = red[0];
	__syncthreads();
	return v;
}

__global__ static void __launch_bounds__(THREADS)
layernorm(const float *x, const float *w, const float *bias, float *y,
	  long long n)
{
	__shared__ float red[THREADS];
	const float *xr = x + blockIdx.x * n;
	float *yr = y + blockIdx.x * n;

	float mean = 0.0f;
	for (long long j = threadIdx.x; j < n; j += THREADS)
		mean += xr[j];
	mean = block_sum(mean, red) / (float)n;

	float var = 0.0f;
	for (long long j = threadIdx.x; j < n; j += THREADS)
		var += xr[j] * xr[j]; /* bug: (xr[j] - mean)^2 */
	var = block_sum(var, red) / (float)n;

	float rstd = 1.0f / sqrtf(var + 1e-5f);
	for (long long j = threadIdx.x; j < n; j += THREADS)
		yr[j] = (xr[j] - mean) * rstd * w[j] + bias[j];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	layernorm<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (const float *)in[1].data,
		(const float *)in[2].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
