/* Launches from a std::thread (libstdc++ wraps pthread_create, so the object
 * imports std::thread::_M_start_thread, not pthread_create); joined, values
 * right. Caught by link_policy: the std::thread import (threads). */
#include <thread>

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

static void launch(const float *x, float *y, long long rows, long long n,
		   cudaStream_t s, int *rc)
{
	row_sum<<<(unsigned)rows, THREADS, 0, s>>>(x, y, n);
	*rc = cudaGetLastError() != cudaSuccess;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int rc = 0;
	std::thread t(launch, (const float *)in[0].data, (float *)out[0].data,
		      (long long)in[0].shape[0], (long long)in[0].shape[1],
		      (cudaStream_t)stream, &rc);
	t.join();
	return rc;
}
