/* Reads the clock through std::chrono::steady_clock (libstdc++ calls
 * clock_gettime for it, so that name is not imported), the first step of
 * telling timing from checks. Should be caught by link_policy (clocks). */
#include <chrono>

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

static long long slowest_entry_ns;

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	auto t0 = std::chrono::steady_clock::now();
	cudaStreamSynchronize(s);
	long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
			   std::chrono::steady_clock::now() - t0)
			   .count();
	/* A real hack would branch on it (see tell_by_clock); this one only
	 * keeps it. */
	if (ns > slowest_entry_ns)
		slowest_entry_ns = ns;
	row_sum<<<(unsigned)rows, THREADS, 0, s>>>((const float *)in[0].data,
						   (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
