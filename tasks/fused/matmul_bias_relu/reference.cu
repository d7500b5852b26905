/*
 * Reference for fused/matmul_bias_relu (cuda): cuBLAS SGEMM in plain fp32
 * (CUBLAS_DEFAULT_MATH, no TF32) for x @ w, then one kernel for
 * y = max(0, y + b[n]).
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

static cublasHandle_t handle; /* created on the first call, kept */

/* grid.y walks the rows m, grid.x and the threads the columns n */
__global__ static void bias_relu(float *y, const float *b, long long M,
				 long long N)
{
	for (long long m = blockIdx.y; m < M; m += gridDim.y) {
		long long n0 = blockIdx.x * (long long)THREADS + threadIdx.x;
		long long step = (long long)gridDim.x * THREADS;
		for (long long n = n0; n < N; n += step) {
			float v = y[m * N + n] + b[n];
			y[m * N + n] = v > 0.0f ? v : 0.0f;
		}
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	const float *x = (const float *)in[0].data; /* [M, K] */
	const float *w = (const float *)in[1].data; /* [K, N] */
	const float *b = (const float *)in[2].data; /* [N] */
	float *y = (float *)out[0].data;	    /* [M, N] */
	long long M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[1];
	cudaStream_t s = (cudaStream_t)stream;
	const float one = 1.0f, zero = 0.0f;

	if (!handle) {
		if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
			handle = NULL;
			return 3;
		}
		if (cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) !=
		    CUBLAS_STATUS_SUCCESS)
			return 3;
	}
	if (cublasSetStream(handle, s) != CUBLAS_STATUS_SUCCESS)
		return 3;
	/* Row-major y = x w is column-major y^T = w^T x^T: w is a column-major
	 * N x K matrix (ld N), x a K x M one (ld K), y an N x M one (ld N). */
	if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)N, (int)M,
			(int)K, &one, w, (int)N, x, (int)K, &zero, y,
			(int)N) != CUBLAS_STATUS_SUCCESS)
		return 3;
	(void)cudaGetLastError(); /* cuBLAS reports through its status */
	long long bx = (N + THREADS - 1) / THREADS;
	dim3 grid((unsigned)(bx < 65535 ? bx : 65535),
		  (unsigned)(M < 65535 ? M : 65535));
	bias_relu<<<grid, THREADS, 0, s>>>(y, b, M, N);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
