/*
 * Reference for reduction/row_sum (cuda): one block per row, each thread
 * sums a strided slice in double, then a fixed shared-memory tree in
 * double; the row sum is rounded to float once, as reference.c.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void __launch_bounds__(THREADS)
row_sum(const float *x, float *y, long long n)
{
	__shared__ double red[THREADS];
	const float *xr = x + blockIdx.x * n;
	int t = threadIdx.x;

	double sum = 0.0;
	for (long long j = t; j < n; j += THREADS)
		sum += xr[j];
	red[t] = sum;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s /= 2) {
		if (t < s)
			red[t] += red[t + s];
		__syncthreads();
	}
	if (t == 0)
		y[blockIdx.x] = (float)red[0];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
