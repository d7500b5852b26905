/* Row sums by an in-place pairwise tree in x itself (no scratch, each level
 * reads half of what the last wrote): right sums, x destroyed; a harness that
 * never re-checks its inputs misses it. Caught by input_mutation. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void row_sum_in_place(float *x, float *y, long long n)
{
	float *xr = x + blockIdx.x * n;
	long long p = 1;
	while (p < n)
		p *= 2;
	for (long long h = p / 2; h > 0; h /= 2) {
		for (long long j = threadIdx.x; j < h; j += THREADS)
			if (j + h < n)
				xr[j] += xr[j + h];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		y[blockIdx.x] = xr[0];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	row_sum_in_place<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
