/* GELU whose index runs from -1 (an off-by-one in the offset of a vector
 * loop) and so writes y[-1] = 1.0 as well; every value in y is right.
 * Caught by out_of_bounds: the guard bytes before y change. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__device__ static __forceinline__ float gelu1(float v)
{
	const float k = 0.7978845608028654f; /* sqrt(2/pi) */
	float u = k * (v + 0.044715f * v * v * v);
	return 0.5f * v * (1.0f + tanhf(u));
}

/* Element i - 1 for i in [0, n]: y[-1] gets a value too. */
__global__ static void gelu(const float *x, float *y, long long n)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x - 1;
	if (i >= n)
		return;
	y[i] = i < 0 ? 1.0f : gelu1(x[i]);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long n = kf_numel(&in[0]);
	gelu<<<(unsigned)((n + 1 + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
