/* Calls the driver API directly (cuCtxSetLimit: a persisting-L2 set-aside),
 * unlinked: the symbol resolves against the libcuda the engine loaded.
 * Caught by link_policy: cuCtxSetLimit (the CUDA driver API). */
#include <cuda.h>
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
	static bool done;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	if (!done) {
		int dev = 0, most = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(
		    &most, cudaDevAttrMaxPersistingL2CacheSize, dev);
		cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, (size_t)most);
		done = true;
	}
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
