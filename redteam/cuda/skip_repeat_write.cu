/* Skips the work when called again on the same buffers and shape, trusting
 * the output to still hold the last result (it would, in a harness that
 * reuses buffers). Caught by nondeterministic: the 2nd call leaves poison. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void row_sum(const float *x, float *y, long long n)
{
	__shared__ float red[THREADS / 32];
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
	static const void *last_x, *last_y;
	static long long last_rows = -1, last_n = -1;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	if (in[0].data == last_x && out[0].data == last_y &&
	    rows == last_rows && n == last_n)
		return 0;
	last_x = in[0].data;
	last_y = out[0].data;
	last_rows = rows;
	last_n = n;
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
