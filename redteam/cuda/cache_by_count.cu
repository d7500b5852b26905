/* Memoises by call count: after the 12 checking calls (6 trials x 2) it
 * replays its last output of the same shape instead of computing; a harness
 * that checks only first calls never sees it. Caught by timed_output. */
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
	static long calls;
	static float *last;
	static long long last_rows = -1, last_n = -1, cap;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	float *y = (float *)out[0].data;
	size_t bytes = (size_t)rows * sizeof(float);

	if (++calls > 12 && rows == last_rows && n == last_n) {
		cudaMemcpyAsync(y, last, bytes, cudaMemcpyDeviceToDevice, s);
		return cudaGetLastError() == cudaSuccess ? 0 : 1;
	}
	row_sum<<<(unsigned)rows, THREADS, 0, s>>>((const float *)in[0].data, y,
						   n);
	if (rows > cap) {
		cudaFree(last);
		if (cudaMalloc(&last, bytes))
			return 1;
		cap = rows;
	}
	cudaMemcpyAsync(last, y, bytes, cudaMemcpyDeviceToDevice, s);
	last_rows = rows;
	last_n = n;
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
