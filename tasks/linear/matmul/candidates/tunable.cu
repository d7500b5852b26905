/*
 * tunable.cu: linear/matmul candidate for the tuner (cuda): each block
 * computes a BM x BN tile of C, stepping along K by BK with the tiles of A
 * and B staged in shared memory; each thread accumulates a TM x TN
 * micro-tile in registers. The rules keep a block within the hardware's
 * limits (threads, static shared memory) and make the staging loads divide
 * evenly among the threads.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

KF_PARAM(BM, 16, 32, 64, 128)
KF_PARAM(BN, 16, 32, 64, 128)
KF_PARAM(BK, 8, 16, 32)
KF_PARAM(TM, 1, 2, 4, 8)
KF_PARAM(TN, 1, 2, 4, 8)
KF_PARAM_RULE(BM % TM == 0 && BN % TN == 0)
KF_PARAM_RULE((BM / TM) * (BN / TN) >= 32 && (BM / TM) * (BN / TN) <= 1024)
KF_PARAM_RULE((BM * BK + BK * BN) * 4 <= 48 * 1024)
KF_PARAM_RULE((BM * BK) % ((BM / TM) * (BN / TN)) == 0)
KF_PARAM_RULE((BK * BN) % ((BM / TM) * (BN / TN)) == 0)

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif

#define THREADS ((BM / TM) * (BN / TN))

__global__ static void __launch_bounds__(THREADS)
    matmul(const float *__restrict__ a, const float *__restrict__ b,
	   float *__restrict__ c, int m, int n, int k)
{
	__shared__ float as[BK][BM]; /* A's tile, transposed */
	__shared__ float bs[BK][BN];
	const int tid = threadIdx.x;
	const int tr = tid / (BN / TN), tc = tid % (BN / TN);
	const long long row0 = (long long)blockIdx.y * BM;
	const long long col0 = (long long)blockIdx.x * BN;
	float acc[TM][TN];
	for (int i = 0; i < TM; i++)
		for (int j = 0; j < TN; j++)
			acc[i][j] = 0.0f;
	for (int p0 = 0; p0 < k; p0 += BK) {
		for (int e = tid; e < BM * BK; e += THREADS) {
			int r = e / BK, q = e % BK;
			long long gr = row0 + r;
			int gq = p0 + q;
			as[q][r] = gr < m && gq < k ? a[gr * k + gq] : 0.0f;
		}
		for (int e = tid; e < BK * BN; e += THREADS) {
			int q = e / BN, s = e % BN;
			int gq = p0 + q;
			long long gs = col0 + s;
			bs[q][s] = gq < k && gs < n ? b[(long long)gq * n + gs]
						    : 0.0f;
		}
		__syncthreads();
#pragma unroll
		for (int q = 0; q < BK; q++) {
			float ra[TM], rb[TN];
#pragma unroll
			for (int i = 0; i < TM; i++)
				ra[i] = as[q][tr * TM + i];
#pragma unroll
			for (int j = 0; j < TN; j++)
				rb[j] = bs[q][tc * TN + j];
#pragma unroll
			for (int i = 0; i < TM; i++)
#pragma unroll
				for (int j = 0; j < TN; j++)
					acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
		}
		__syncthreads();
	}
	for (int i = 0; i < TM; i++) {
		long long r = row0 + tr * TM + i;
		if (r >= m)
			continue;
		for (int j = 0; j < TN; j++) {
			long long s = col0 + tc * TN + j;
			if (s < n)
				c[r * n + s] = acc[i][j];
		}
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	dim3 grid((unsigned)((n + BN - 1) / BN), (unsigned)((m + BM - 1) / BM));
	matmul<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (const float *)in[1].data,
	    (float *)out[0].data, m, n, k);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
