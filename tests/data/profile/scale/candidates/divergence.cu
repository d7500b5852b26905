/* Profile trigger, divergence: odd lanes run a long loop that leaves the
 * value as it was (fmaf(v, 1, 0) with one and zero known only at run
 * time), even lanes skip it. Expected: divergence. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void scale_divergent(const float *x, float *y, long long n,
				       float one, float zero, int reps)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float v = x[i];
	if (threadIdx.x & 1)
		for (int r = 0; r < reps; r++)
			v = fmaf(v, one, zero);
	y[i] = 2.0f * v;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long n = kf_numel(&in[0]);
	const float *x = (const float *)in[0].data;
	float *y = (float *)out[0].data;
	cudaStream_t s = (cudaStream_t)stream;
	if (n == 0)
		return 0;
	scale_divergent<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n, 1.0f, 0.0f, 256);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
