/*
 * Fast fused/matmul_bias_relu (cuda): 128 x 128 x 8 shared-memory SGEMM,
 * double-buffered with register prefetch, 8 x 8 register tiles, float4 loads
 * and stores when K, N % 4 == 0; bias + ReLU fused into the epilogue.
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define BM 128
#define BN 128
#define BK 8
#define THREADS 256
#define APAD 4 /* As row pitch BM + 4: conflict-free transposed stores */

/*
 * x [M, K], w [K, N], b [N], y [M, N], row-major. VA: K % 4 == 0 and x
 * 16-byte aligned (float4 loads of x rows); VB: N % 4 == 0 and w, b, y
 * 16-byte aligned (float4 loads of w rows, float4 stores of y).
 * Thread (ty, tx) = (tid / 16, tid % 16) owns rows ty*4 + i and
 * 64 + ty*4 + i, columns tx*4 + j and 64 + tx*4 + j (i, j < 4).
 */
template <bool VA, bool VB>
__global__ static void __launch_bounds__(THREADS, 2)
gemm_bias_relu(const float *__restrict__ x, const float *__restrict__ w,
	       const float *__restrict__ b, float *__restrict__ y, int M,
	       int N, int K)
{
	__shared__ __align__(16) float As[2][BK][BM + APAD]; /* x^T slice */
	__shared__ __align__(16) float Bs[2][BK][BN];	     /* w slice */
	int tid = threadIdx.x;
	int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

	/* loaders: x row am, k am_k .. + 3; w row bk, columns bn .. + 3 */
	int am = tid / 2, ak = (tid % 2) * 4;
	int bk = tid / 32, bn = (tid % 32) * 4;
	const float *xrow = x + (long long)(m0 + am) * K;
	bool arow = m0 + am < M;
	float4 ra, rb;

	auto load = [&](int k0) {
		int ka = k0 + ak;
		if (VA) {
			ra = arow && ka < K ? __ldg((const float4 *)(xrow + ka))
					    : make_float4(0.f, 0.f, 0.f, 0.f);
		} else {
			ra.x = arow && ka < K ? __ldg(xrow + ka) : 0.f;
			ra.y = arow && ka + 1 < K ? __ldg(xrow + ka + 1) : 0.f;
			ra.z = arow && ka + 2 < K ? __ldg(xrow + ka + 2) : 0.f;
			ra.w = arow && ka + 3 < K ? __ldg(xrow + ka + 3) : 0.f;
		}
		int kb = k0 + bk, nb = n0 + bn;
		const float *wrow = w + (long long)kb * N;
		if (VB) {
			const float4 *wv = (const float4 *)(wrow + nb);
			rb = kb < K && nb < N ? __ldg(wv)
					      : make_float4(0.f, 0.f, 0.f, 0.f);
		} else {
			bool ok = kb < K;
			rb.x = ok && nb < N ? __ldg(wrow + nb) : 0.f;
			rb.y = ok && nb + 1 < N ? __ldg(wrow + nb + 1) : 0.f;
			rb.z = ok && nb + 2 < N ? __ldg(wrow + nb + 2) : 0.f;
			rb.w = ok && nb + 3 < N ? __ldg(wrow + nb + 3) : 0.f;
		}
	};
	auto store = [&](int buf) {
		As[buf][ak + 0][am] = ra.x;
		As[buf][ak + 1][am] = ra.y;
		As[buf][ak + 2][am] = ra.z;
		As[buf][ak + 3][am] = ra.w;
		*(float4 *)&Bs[buf][bk][bn] = rb;
	};

	int tx = tid % 16, ty = tid / 16;
	float acc[8][8];
#pragma unroll
	for (int i = 0; i < 8; i++)
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i][j] = 0.0f;

	int steps = (K + BK - 1) / BK;
	load(0);
	store(0);
	__syncthreads();
	for (int st = 0; st < steps; st++) {
		int cur = st & 1;
		if (st + 1 < steps)
			load((st + 1) * BK);
#pragma unroll
		for (int kk = 0; kk < BK; kk++) {
			float4 a0 = *(const float4 *)&As[cur][kk][ty * 4];
			float4 a1 = *(const float4 *)&As[cur][kk][64 + ty * 4];
			float4 b0 = *(const float4 *)&Bs[cur][kk][tx * 4];
			float4 b1 = *(const float4 *)&Bs[cur][kk][64 + tx * 4];
			float av[8] = {a0.x, a0.y, a0.z, a0.w,
				       a1.x, a1.y, a1.z, a1.w};
			float bv[8] = {b0.x, b0.y, b0.z, b0.w,
				       b1.x, b1.y, b1.z, b1.w};
#pragma unroll
			for (int i = 0; i < 8; i++)
#pragma unroll
				for (int j = 0; j < 8; j++)
					acc[i][j] = fmaf(av[i], bv[j],
							 acc[i][j]);
		}
		if (st + 1 < steps)
			store(cur ^ 1); /* read last in step st - 1 */
		__syncthreads();
	}

	/* epilogue: y = max(0, acc + b) */
#pragma unroll
	for (int h = 0; h < 2; h++) {
		int n = n0 + h * 64 + tx * 4;
		float bias[4];
#pragma unroll
		for (int j = 0; j < 4; j++)
			bias[j] = n + j < N ? __ldg(b + n + j) : 0.f;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			int m = m0 + (i / 4) * 64 + ty * 4 + i % 4;
			if (m >= M)
				continue;
			float *yrow = y + (long long)m * N;
			float v[4];
#pragma unroll
			for (int j = 0; j < 4; j++)
				v[j] = fmaxf(acc[i][h * 4 + j] + bias[j], 0.0f);
			if (VB) {
				if (n < N) /* N % 4 == 0: n + 3 < N too */
					*(float4 *)(yrow + n) =
					    make_float4(v[0], v[1], v[2], v[3]);
			} else {
#pragma unroll
				for (int j = 0; j < 4; j++)
					if (n + j < N)
						yrow[n + j] = v[j];
			}
		}
	}
}

template <bool VA, bool VB>
static void launch(const float *x, const float *w, const float *b, float *y,
		   int M, int N, int K, cudaStream_t s)
{
	dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
	gemm_bias_relu<VA, VB><<<grid, THREADS, 0, s>>>(x, w, b, y, M, N, K);
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
	bool va = K % 4 == 0 && ((uintptr_t)x & 15) == 0;
	bool vb = N % 4 == 0 &&
		  (((uintptr_t)w | (uintptr_t)b | (uintptr_t)y) & 15) == 0;

	if (M > 0x7fffffffLL || N > 0x7fffffffLL || K > 0x7fffffffLL ||
	    (M + BM - 1) / BM > 65535)
		return 2;
	if (va && vb)
		launch<true, true>(x, w, b, y, (int)M, (int)N, (int)K, s);
	else if (va)
		launch<true, false>(x, w, b, y, (int)M, (int)N, (int)K, s);
	else if (vb)
		launch<false, true>(x, w, b, y, (int)M, (int)N, (int)K, s);
	else
		launch<false, false>(x, w, b, y, (int)M, (int)N, (int)K, s);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
