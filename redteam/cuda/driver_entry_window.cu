/* Gets cuStreamSetAttribute through cudaGetDriverEntryPointByVersion (no
 * import of it) and leaves an L2 access policy window on the engine's stream.
 * Caught by global_state: the engine stream's access window changed. */
#include <cuda.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

typedef CUresult (*set_attr_fn)(CUstream, CUstreamAttrID,
				const CUstreamAttrValue *);

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
	static set_attr_fn set_attr;
	static int window = -1;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	const float *x = (const float *)in[0].data;
	if (window < 0) {
		void *p = NULL;
		cudaDriverEntryPointQueryResult q;
		int dev = 0;
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(
		    &window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
		if (!cudaGetDriverEntryPointByVersion("cuStreamSetAttribute",
						      &p, 12000,
						      cudaEnableDefault, &q) &&
		    q == cudaDriverEntryPointSuccess)
			set_attr = (set_attr_fn)p;
		cudaGetLastError();
	}
	size_t bytes = (size_t)(rows * n) * sizeof(float);
	if (bytes > (size_t)window)
		bytes = (size_t)window;
	if (set_attr && bytes > 0) {
		CUstreamAttrValue v;
		memset(&v, 0, sizeof(v));
		v.accessPolicyWindow.base_ptr = (void *)x;
		v.accessPolicyWindow.num_bytes = bytes;
		v.accessPolicyWindow.hitRatio = 1.0f;
		v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
		v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_STREAMING;
		set_attr((CUstream)s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
			 &v);
	}
	row_sum<<<(unsigned)rows, THREADS, 0, s>>>(x, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
