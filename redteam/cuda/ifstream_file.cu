/* Reads a file through std::ifstream (libstdc++ calls fopen/open for it, so
 * the object imports only basic_ifstream): /proc/self/maps, the map an
 * attack on the worker needs. Should be caught by link_policy (files). */
#include <fstream>
#include <string>

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

static size_t mapped_regions;

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	if (!mapped_regions) {
		std::ifstream maps("/proc/self/maps");
		std::string line;
		while (std::getline(maps, line))
			mapped_regions++;
	}
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
