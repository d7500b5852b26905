/*
 * Naive candidate for reduction/row_sum (cuda): one thread per row, one
 * float accumulator, left to right (lanes of a warp read different rows).
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void row_sum(const float *x, float *y, long long rows,
			       long long n)
{
	long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (b >= rows)
		return;
	float sum = 0.0f;
	for (long long j = 0; j < n; j++)
		sum += x[b * n + j];
	y[b] = sum;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	row_sum<<<(unsigned)((rows + 127) / 128), 128, 0,
		  (cudaStream_t)stream>>>((const float *)in[0].data,
					  (float *)out[0].data, rows, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
