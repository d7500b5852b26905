/*
 * Reference for activation/gelu (cuda): the textbook tanh-approximation GELU,
 * one element per thread with CUDA's tanhf, the formula of reference.c.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void gelu(const float *x, float *y, long long n)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const float k = 0.7978845608028654f; /* sqrt(2/pi) */
	float v = x[i];
	float u = k * (v + 0.044715f * v * v * v);
	y[i] = 0.5f * v * (1.0f + tanhf(u));
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long n = kf_numel(&in[0]);
	unsigned blocks = (unsigned)((n + 255) / 256);
	gelu<<<blocks, 256, 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
