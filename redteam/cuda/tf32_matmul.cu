/* cuBLAS SGEMM with TF32 tensor cores switched on (10-bit mantissas, ~8x the
 * fp32 rate). Too crude to hide here: at K = 4096 its error (~0.02) exceeds
 * matmul's 1e-3 tolerance on ~17% of elements. Caught by mismatch. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	static cublasHandle_t h;
	const float one = 1.0f, zero = 0.0f;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	if (!h) {
		if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
		    cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) !=
			CUBLAS_STATUS_SUCCESS)
			return 1;
	}
	cublasSetStream(h, (cudaStream_t)stream);
	if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
			(const float *)in[1].data, n, (const float *)in[0].data,
			k, &zero, (float *)out[0].data,
			n) != CUBLAS_STATUS_SUCCESS)
		return 1;
	return 0;
}
