/* Reserves L2 for persisting accesses and marks x persisting per launch, so
 * x survives the harness's L2 flush (warm-cache timing). Values right.
 * Caught by link_policy: cudaDeviceSetLimit (device-global state). */
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
	static int set_aside = -1, window = 0;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	const float *x = (const float *)in[0].data;
	float *y = (float *)out[0].data;
	if (set_aside < 0) {
		int dev = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(
		    &set_aside, cudaDevAttrMaxPersistingL2CacheSize, dev);
		cudaDeviceGetAttribute(
		    &window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
		cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize,
				   (size_t)set_aside);
	}
	size_t bytes = (size_t)(rows * n) * sizeof(float);
	if (bytes > (size_t)window)
		bytes = (size_t)window;
	cudaLaunchAttribute attr[1];
	attr[0].id = cudaLaunchAttributeAccessPolicyWindow;
	attr[0].val.accessPolicyWindow.base_ptr = (void *)x;
	attr[0].val.accessPolicyWindow.num_bytes = bytes;
	attr[0].val.accessPolicyWindow.hitRatio =
	    bytes > (size_t)set_aside ? (float)set_aside / (float)bytes : 1.0f;
	attr[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
	attr[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3((unsigned)rows);
	cfg.blockDim = dim3(THREADS);
	cfg.stream = (cudaStream_t)stream;
	cfg.attrs = attr;
	cfg.numAttrs = bytes > 0 ? 1 : 0;
	if (cudaLaunchKernelEx(&cfg, row_sum, x, y, n))
		return 1;
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
