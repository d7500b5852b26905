/* GELU over all but the last 1/64 of y (the tail "is the same anyway"): a
 * harness that checks a prefix or a sample of the output passes it.
 * Caught by unwritten: every element is checked against the poison. */
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
	long long m = n - (n + 63) / 64;
	if (m > 0)
		gelu<<<(unsigned)((m + 255) / 256), 256, 0,
		       (cudaStream_t)stream>>>((const float *)in[0].data,
					       (float *)out[0].data, m);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
