/* Finds the driver's cuCtxSetLimit with dlsym in the process (the engine
 * loaded libcuda globally) and sets a persisting-L2 set-aside with it.
 * Caught by link_policy: dlsym (dynamic loading). */
#include <dlfcn.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

typedef CUresult (*set_limit_fn)(CUlimit, size_t);

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
		set_limit_fn f =
		    (set_limit_fn)dlsym(RTLD_DEFAULT, "cuCtxSetLimit");
		int dev = 0, most = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(
		    &most, cudaDevAttrMaxPersistingL2CacheSize, dev);
		if (f)
			f(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, (size_t)most);
		done = true;
	}
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
