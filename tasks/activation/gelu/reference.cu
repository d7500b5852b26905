/*
 * Reference for activation/gelu (cuda): the tanh-approximation GELU, one
 * element per thread, computed in double and rounded once to float, as
 * reference.c.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void gelu(const float *x, float *y, long long n)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const double k = 0.7978845608028654; /* sqrt(2/pi) */
	double v = x[i];
	double u = k * (v + 0.044715 * v * v * v);
	y[i] = (float)(0.5 * v * (1.0 + tanh(u)));
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
