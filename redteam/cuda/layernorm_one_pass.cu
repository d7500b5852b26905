/* Layernorm, one thread per row, with the one-pass float variance
 * E[x^2] - E[x]^2: rows of the "large" stress input (mean 30) cancel
 * catastrophically: wrong_answer. */
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
	float s = 0, sq = 0;
	for (long long j = 0; j < n; j++) {
		s += xr[j];
		sq += xr[j] * xr[j];
	}
	float mean = s / (float)n;
	float var = fmaxf(sq / (float)n - mean * mean, 0.0f);
	float r = rsqrtf(var + 1e-5f);
	for (long long j = 0; j < n; j++)
		y[b * n + j] = (xr[j] - mean) * r * w[j] + bias[j];
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
