/*
 * Wrong candidate for fused/matmul_bias_relu (cuda): 16 x 16 shared-memory
 * tiled matmul whose k loop only runs over whole tiles (k0 + 16 <= K), so
 * the last K % 16 terms are dropped (right only when 16 divides K).
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define TS 16

__global__ static void mm_bias_relu(const float *x, const float *w,
				    const float *b, float *y, int M, int K,
				    int N)
{
	__shared__ float xs[TS][TS], ws[TS][TS + 1];
	int tx = threadIdx.x, ty = threadIdx.y;
	int m = blockIdx.y * TS + ty, n = blockIdx.x * TS + tx;
	float acc = 0.0f;

	for (int k0 = 0; k0 + TS <= K; k0 += TS) { /* BUG: k0 < K */
		xs[ty][tx] = m < M ? x[(long long)m * K + k0 + tx] : 0.0f;
		ws[ty][tx] = n < N ? w[(long long)(k0 + ty) * N + n] : 0.0f;
		__syncthreads();
		for (int k = 0; k < TS; k++)
			acc += xs[ty][k] * ws[k][tx];
		__syncthreads();
	}
	if (m < M && n < N) {
		acc += b[n];
		y[(long long)m * N + n] = acc > 0.0f ? acc : 0.0f;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int M = (int)in[0].shape[0], K = (int)in[0].shape[1];
	int N = (int)in[1].shape[1];
	dim3 grid((unsigned)((N + TS - 1) / TS), (unsigned)((M + TS - 1) / TS));

	mm_bias_relu<<<grid, dim3(TS, TS), 0, (cudaStream_t)stream>>>(
		(const float *)in[0].data, (const float *)in[1].data,
		(const float *)in[2].data, (float *)out[0].data, M, K, N);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
