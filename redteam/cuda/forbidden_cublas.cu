/* Row sums as a cuBLAS gemv against a vector of ones, on a task that allows
 * no libraries (kforge links only -lcudart, so the import is what shows).
 * Caught by link_policy: cublas* (the task does not allow cublas). */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

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
	static cublasHandle_t h;
	static float *ones;
	static long long ones_n;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	const float one = 1.0f, zero = 0.0f;
	if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
		return 1;
	if (n > ones_n) {
		cudaFree(ones);
		if (cudaMalloc(&ones, (size_t)n * sizeof(float)))
			return 1;
		ones_n = n;
	}
	fill_ones<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(ones, n);
	cublasSetStream(h, s);
	/* column-major view: x is an n x rows matrix; y = x^T ones */
	if (cublasSgemv(h, CUBLAS_OP_T, (int)n, (int)rows, &one,
			(const float *)in[0].data, (int)n, ones, 1, &zero,
			(float *)out[0].data, 1) != CUBLAS_STATUS_SUCCESS)
		return 1;
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
