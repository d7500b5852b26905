/* Loads cuBLAS at run time (dlopen + dlsym of cublasSgemv) on a task that
 * allows no libraries, so the link line and the imports show no cublas.
 * Caught by link_policy: dlopen, dlsym (dynamic loading). */
#include <dlfcn.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*gemv_fn)(cublasHandle_t, cublasOperation_t, int, int,
				  const float *, const float *, int,
				  const float *, int, const float *, float *,
				  int);

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

__global__ static void fill_ones(float *v, long long n)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i < n)
		v[i] = 1.0f;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	static void *lib;
	static cublasHandle_t h;
	static stream_fn set_stream;
	static gemv_fn gemv;
	static float *ones;
	static long long ones_n;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	const float one = 1.0f, zero = 0.0f;
	if (!lib) {
		lib = dlopen("libcublas.so", RTLD_NOW);
		if (!lib)
			lib = dlopen("libcublas.so.13", RTLD_NOW);
		if (!lib)
			lib = dlopen("libcublas.so.12", RTLD_NOW);
		create_fn create =
		    lib ? (create_fn)dlsym(lib, "cublasCreate_v2") : NULL;
		set_stream =
		    lib ? (stream_fn)dlsym(lib, "cublasSetStream_v2") : NULL;
		gemv = lib ? (gemv_fn)dlsym(lib, "cublasSgemv_v2") : NULL;
		if (!create || !set_stream || !gemv ||
		    create(&h) != CUBLAS_STATUS_SUCCESS)
			gemv = NULL;
	}
	if (!gemv) { /* no cuBLAS here: plain kernel */
		row_sum<<<(unsigned)rows, THREADS, 0, s>>>(
		    (const float *)in[0].data, (float *)out[0].data, n);
		return cudaGetLastError() == cudaSuccess ? 0 : 1;
	}
	if (n > ones_n) {
		cudaFree(ones);
		if (cudaMalloc(&ones, (size_t)n * sizeof(float)))
			return 1;
		ones_n = n;
	}
	fill_ones<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(ones, n);
	set_stream(h, s);
	if (gemv(h, CUBLAS_OP_T, (int)n, (int)rows, &one,
		 (const float *)in[0].data, (int)n, ones, 1, &zero,
		 (float *)out[0].data, 1) != CUBLAS_STATUS_SUCCESS)
		return 1;
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
