/* Gets cuCtxSetCacheConfig through cudaGetDriverEntryPointByVersion (no
 * driver import) and sets the context's cache preference to L1 for good.
 * Caught by global_state: the context's cache config changed. */
#include <cuda.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

typedef CUresult (*set_cache_fn)(CUfunc_cache);

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
		void *p = NULL;
		cudaDriverEntryPointQueryResult q;
		if (!cudaGetDriverEntryPointByVersion("cuCtxSetCacheConfig", &p,
						      12000, cudaEnableDefault,
						      &q) &&
		    q == cudaDriverEntryPointSuccess && p)
			((set_cache_fn)p)(CU_FUNC_CACHE_PREFER_L1);
		cudaGetLastError();
		done = true;
	}
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
