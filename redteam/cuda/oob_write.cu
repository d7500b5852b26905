/* Row sums whose grid guard is off by one: the thread for row B writes a
 * (harmless-looking) value one element past the end of y; the values are
 * right. Caught by out_of_bounds: the guard bytes after y change. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void row_sum(const float *x, float *y, long long rows,
			       long long n)
{
	__shared__ float red[THREADS / 32];
	if (blockIdx.x == rows) { /* the spare block of a rounded-up grid */
		if (threadIdx.x == 0)
			y[rows] = 0.5f;
		return;
	}
	const float *xr = x + blockIdx.x * n;
	float s = 0.0f;
	for (long long j = threadIdx.x; j < n; j += THREADS)
		s += xr[j];
	for (int o = 16; o > 0; o /= 2)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.0f;
		for (int i = 0; i < THREADS / 32; i++)
			t += red[i];
		y[blockIdx.x] = t;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	row_sum<<<(unsigned)(rows + 1), THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, rows, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
