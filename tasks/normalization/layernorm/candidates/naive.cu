/*
 * Naive candidate for normalization/layernorm (cuda): one thread per row,
 * the two-pass formula with float accumulators and a division per element,
 * as the host naive.c (uncoalesced: lanes of a warp read different rows).
 */
#include <math.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void layernorm(const float *x, const float *w,
				 const float *bias, float *y, long long rows,
				 long long n)
{
	long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (b >= rows)
		return;
	const float *xr = x + b * n;
	float *yr = y + b * n;

	float mean = 0.0f, var = 0.0f;
	for (long long j = 0; j < n; j++)
		mean += xr[j];
	mean /= (float)n;
	for (long long j = 0; j < n; j++) {
		float d = xr[j] - mean;
		var += d * d;
	}
	var /= (float)n;
	for (long long j = 0; j < n; j++)
		yr[j] = (xr[j] - mean) / sqrtf(var + 1e-5f) * w[j] + bias[j];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	layernorm<<<(unsigned)((rows + 127) / 128), 128, 0,
		    (cudaStream_t)stream>>>(
		(const float *)in[0].data, (const float *)in[1].data,
		(const float *)in[2].data, (float *)out[0].data, rows, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
