/*
 * Fast candidate for linear/matmul (cuda): a tiled SGEMM; 128x128 block
 * tiles, K steps of 8 through double-buffered shared memory (A transposed,
 * padded against bank conflicts), the next tile prefetched into registers
 * during the math, and an 8x8 register tile per thread fed by float4
 * shared-memory reads. float4 global loads/stores when rows are 16-byte
 * aligned (K % 4, N % 4), guarded scalar ones otherwise; zero-filled edges.
 */
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define BM 128
#define BN 128
#define BK 8
#define THREADS 256 /* 16 x 16 threads, 8 x 8 outputs each */
#define APAD 4 /* As rows of BM + 4: conflict-free transposed stores */

/*
 * Block (tm, tn) computes C[tm*BM .. +BM)[tn*BN .. +BN). Thread (ty, tx) =
 * (tid / 16, tid % 16) owns rows ty*4 + {0..3} and 64 + ty*4 + {0..3},
 * columns tx*4 + {0..3} and 64 + tx*4 + {0..3}: its float4 reads of a
 * k-row of As and Bs are conflict-free (or broadcasts).
 * VA: K % 4 == 0 and A 16-byte aligned; VB: N % 4 == 0 and B aligned;
 * VC: N % 4 == 0 and C aligned.
 */
template <bool VA, bool VB, bool VC>
__global__ static void __launch_bounds__(THREADS, 2)
sgemm(const float *__restrict__ A, const float *__restrict__ B,
      float *__restrict__ C, int M, int N, int K, int tiles_n)
{
	__shared__ __align__(16) float As[2][BK][BM + APAD];
	__shared__ __align__(16) float Bs[2][BK][BN];
	const int tid = threadIdx.x;
	const int tm = blockIdx.x / tiles_n, tn = blockIdx.x % tiles_n;
	const int m0 = tm * BM, n0 = tn * BN;

	/* global -> register staging: A row ar, k cols ak..ak+3 of the tile;
	 * B k-row bk, cols bn..bn+3 */
	const int ar = tid >> 1, ak = (tid & 1) * 4;
	const int bk = tid >> 5, bn = (tid & 31) * 4;
	const long long arow = m0 + ar;
	const int bcol = n0 + bn;
	float ra[4], rb[4];

	const int ty = tid >> 4, tx = tid & 15;
	float acc[8][8];
#pragma unroll
	for (int i = 0; i < 8; i++)
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i][j] = 0.0f;

	auto load = [&](int k0) {
		int ka = k0 + ak;
		if (VA) {
			float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
			if (arow < M && ka < K) /* K % 4 == 0: ka + 3 < K */
				v = *(const float4 *)(A + arow * K + ka);
			ra[0] = v.x;
			ra[1] = v.y;
			ra[2] = v.z;
			ra[3] = v.w;
		} else {
#pragma unroll
			for (int q = 0; q < 4; q++)
				ra[q] = arow < M && ka + q < K
						? A[arow * K + ka + q]
						: 0.0f;
		}
		long long kb = k0 + bk;
		if (VB) {
			float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
			if (kb < K && bcol < N) /* N % 4 == 0 */
				v = *(const float4 *)(B + kb * N + bcol);
			rb[0] = v.x;
			rb[1] = v.y;
			rb[2] = v.z;
			rb[3] = v.w;
		} else {
#pragma unroll
			for (int q = 0; q < 4; q++)
				rb[q] = kb < K && bcol + q < N
						? B[kb * N + bcol + q]
						: 0.0f;
		}
	};
	auto store = [&](int buf) {
#pragma unroll
		for (int q = 0; q < 4; q++)
			As[buf][ak + q][ar] = ra[q];
		*(float4 *)&Bs[buf][bk][bn] =
			make_float4(rb[0], rb[1], rb[2], rb[3]);
	};

	const int ktiles = (K + BK - 1) / BK;
	load(0);
	store(0);
	__syncthreads();
	for (int kt = 0; kt < ktiles; kt++) {
		const int cur = kt & 1;
		if (kt + 1 < ktiles)
			load((kt + 1) * BK); /* in flight during the math */
#pragma unroll
		for (int k = 0; k < BK; k++) {
			float a[8], b[8];
			float4 t;
			t = *(const float4 *)&As[cur][k][ty * 4];
			a[0] = t.x;
			a[1] = t.y;
			a[2] = t.z;
			a[3] = t.w;
			t = *(const float4 *)&As[cur][k][64 + ty * 4];
			a[4] = t.x;
			a[5] = t.y;
			a[6] = t.z;
			a[7] = t.w;
			t = *(const float4 *)&Bs[cur][k][tx * 4];
			b[0] = t.x;
			b[1] = t.y;
			b[2] = t.z;
			b[3] = t.w;
			t = *(const float4 *)&Bs[cur][k][64 + tx * 4];
			b[4] = t.x;
			b[5] = t.y;
			b[6] = t.z;
			b[7] = t.w;
#pragma unroll
			for (int i = 0; i < 8; i++)
#pragma unroll
				for (int j = 0; j < 8; j++)
					acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
		}
		/* buffer cur ^ 1 was last read before the previous barrier */
		if (kt + 1 < ktiles)
			store(cur ^ 1);
		__syncthreads();
	}

#pragma unroll
	for (int i = 0; i < 8; i++) {
		long long r = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
		if (r >= M)
			continue;
		float *crow = C + r * N;
#pragma unroll
		for (int h = 0; h < 2; h++) {
			int col = n0 + h * 64 + tx * 4;
			const float *v = &acc[i][h * 4];
			if (VC) {
				if (col < N) /* N % 4 == 0: col + 3 < N */
					*(float4 *)(crow + col) = make_float4(
						v[0], v[1], v[2], v[3]);
			} else {
#pragma unroll
				for (int q = 0; q < 4; q++)
					if (col + q < N)
						crow[col + q] = v[q];
			}
		}
	}
}

template <bool VA, bool VB>
static void launch_c(bool vc, dim3 g, const float *a, const float *b,
		     float *c, int m, int n, int k, int tn, cudaStream_t s)
{
	if (vc)
		sgemm<VA, VB, true><<<g, THREADS, 0, s>>>(a, b, c, m, n, k, tn);
	else
		sgemm<VA, VB, false><<<g, THREADS, 0, s>>>(a, b, c, m, n, k,
							      tn);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	const float *a = (const float *)in[0].data;
	const float *b = (const float *)in[1].data;
	float *c = (float *)out[0].data;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	cudaStream_t s = (cudaStream_t)stream;

	bool va = k % 4 == 0 && ((uintptr_t)a & 15) == 0;
	bool vb = n % 4 == 0 && ((uintptr_t)b & 15) == 0;
	bool vc = n % 4 == 0 && ((uintptr_t)c & 15) == 0;
	int tiles_n = (n + BN - 1) / BN;
	long long tiles = (long long)((m + BM - 1) / BM) * tiles_n;
	dim3 g((unsigned)tiles); /* 1-D grid: no 65535 limit on either side */

	if (va && vb)
		launch_c<true, true>(vc, g, a, b, c, m, n, k, tiles_n, s);
	else if (va)
		launch_c<true, false>(vc, g, a, b, c, m, n, k, tiles_n, s);
	else if (vb)
		launch_c<false, true>(vc, g, a, b, c, m, n, k, tiles_n, s);
	else
		launch_c<false, false>(vc, g, a, b, c, m, n, k, tiles_n, s);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
