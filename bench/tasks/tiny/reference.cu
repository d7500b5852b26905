/* Reference for bench/tasks/tiny on the cuda backend: y = x + 1, one block. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void add_one(const float *x, float *y, long long n)
{
	long long i = threadIdx.x;
	if (i < n)
		y[i] = x[i] + 1.0f;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long n = in[0].shape[0];
	add_one<<<1, 32, 0, (cudaStream_t)stream>>>((const float *)in[0].data,
						   (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
