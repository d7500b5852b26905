/*
 * Fast candidate for linear/matmul_bf16 (cuda): tensor cores through WMMA
 * (bf16 16x16x16 fragments, fp32 accumulators); 128x128 block tiles of 8
 * warps (each 64x32, 4x2 fragments), K steps of 32 through double-buffered,
 * padded shared memory, the next tile fetched during the math by 16-byte
 * cp.async copies (register-staged guarded scalar loads when K % 8 or
 * N % 8; zero-filled edges), and an epilogue that rounds each fp32 sum to
 * bfloat16 once.
 */
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <kforge/kernel.h>

using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define THREADS 256 /* 8 warps: 2 (M) x 4 (N), each 64 x 32 of C */
#define LDA (BK + 8) /* 40 bf16 = 80 B rows: ldmatrix conflict-free */
#define LDB (BN + 8) /* 136 bf16 = 272 B rows */

/* two bf16 bit patterns in one 32-bit word, lo at the lower address */
__device__ static __forceinline__ uint32_t pair(uint32_t lo, uint32_t hi)
{
	return lo | hi << 16;
}

/* 8 consecutive elements of a row, zero where e >= lim (scalar loads) */
__device__ static __forceinline__ uint4 load8(const uint16_t *p, int lim)
{
	uint32_t h[8];
#pragma unroll
	for (int e = 0; e < 8; e++)
		h[e] = e < lim ? p[e] : 0u;
	return make_uint4(pair(h[0], h[1]), pair(h[2], h[3]),
			  pair(h[4], h[5]), pair(h[6], h[7]));
}

/* 16 bytes global -> shared, asynchronously; zeros instead when !in (the
 * source is then not read, but still a valid address) */
__device__ static __forceinline__ void cp16(void *dst, const void *src,
					    bool in)
{
	unsigned d = (unsigned)__cvta_generic_to_shared(dst);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d),
		     "l"(src), "r"(in ? 16 : 0)
		     : "memory");
}

/*
 * VA: K % 8 == 0 and A 16-byte aligned; VB: N % 8 == 0 and B aligned;
 * VC: N % 8 == 0 and C aligned (8 bf16 = 16 bytes per store).
 */
template <bool VA, bool VB, bool VC>
__global__ static void __launch_bounds__(THREADS, 2)
gemm(const uint16_t *__restrict__ A, const uint16_t *__restrict__ B,
     uint16_t *__restrict__ C, int M, int N, int K, int tiles_n)
{
	__shared__ __align__(128) uint16_t As[2][BM * LDA];
	__shared__ __align__(128) uint16_t Bs[2][BK * LDB];
	__shared__ __align__(128) float stage[THREADS / 32][16 * 16];
	const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	const int wm = warp / 4, wn = warp % 4;
	const int m0 = (blockIdx.x / tiles_n) * BM;
	const int n0 = (blockIdx.x % tiles_n) * BN;

	/*
	 * Each thread moves two 8-element (16-byte) chunks of A and two of B
	 * per K step; chunk q = tid + i * 256: A row q / 4, cols (q % 4) * 8;
	 * B row q / 16, cols (q % 16) * 8. Aligned operands go global ->
	 * shared by cp.async (zero-filled outside the matrix); the others
	 * through registers (ra, rb) with guarded scalar loads.
	 */
	uint4 ra[2], rb[2];

	auto issue = [&](int k0, int buf) {
#pragma unroll
		for (int i = 0; i < 2; i++) {
			int q = tid + i * THREADS;
			long long r = m0 + q / 4;
			int kc = k0 + (q % 4) * 8;
			bool in = r < M && kc < K;
			if (VA) /* K % 8 == 0: kc + 7 < K when kc < K */
				cp16(&As[buf][(q / 4) * LDA + (q % 4) * 8],
				     in ? A + r * K + kc : A, in);
			else
				ra[i] = in ? load8(A + r * K + kc, K - kc)
					   : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int i = 0; i < 2; i++) {
			int q = tid + i * THREADS;
			long long r = k0 + q / 16;
			int nc = n0 + (q % 16) * 8;
			bool in = r < K && nc < N;
			if (VB) /* N % 8 == 0 */
				cp16(&Bs[buf][(q / 16) * LDB + (q % 16) * 8],
				     in ? B + r * N + nc : B, in);
			else
				rb[i] = in ? load8(B + r * N + nc, N - nc)
					   : make_uint4(0, 0, 0, 0);
		}
	};
	/* finish the K step issued into buf: register stores, then wait for
	 * this thread's copies (the caller's barrier publishes them) */
	auto land = [&](int buf) {
#pragma unroll
		for (int i = 0; i < 2; i++) {
			int q = tid + i * THREADS;
			uint16_t *da = &As[buf][(q / 4) * LDA + (q % 4) * 8];
			uint16_t *db = &Bs[buf][(q / 16) * LDB + (q % 16) * 8];
			if (!VA)
				*(uint4 *)da = ra[i];
			if (!VB)
				*(uint4 *)db = rb[i];
		}
		if (VA || VB)
			asm volatile("cp.async.wait_all;\n" ::: "memory");
	};

	wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 2; j++)
			wmma::fill_fragment(acc[i][j], 0.0f);

	const int ktiles = (K + BK - 1) / BK;
	issue(0, 0);
	land(0);
	__syncthreads();
	for (int kt = 0; kt < ktiles; kt++) {
		const int cur = kt & 1;
		/* buffer cur ^ 1 was last read before the previous barrier */
		if (kt + 1 < ktiles)
			issue((kt + 1) * BK, cur ^ 1); /* lands during math */
		const __nv_bfloat16 *as = (const __nv_bfloat16 *)As[cur];
		const __nv_bfloat16 *bs = (const __nv_bfloat16 *)Bs[cur];
#pragma unroll
		for (int kk = 0; kk < BK; kk += 16) {
			wmma::fragment<wmma::matrix_a, 16, 16, 16,
				       __nv_bfloat16, wmma::row_major>
				fa;
			wmma::fragment<wmma::matrix_b, 16, 16, 16,
				       __nv_bfloat16, wmma::row_major>
				fb[2];
#pragma unroll
			for (int j = 0; j < 2; j++)
				wmma::load_matrix_sync(
					fb[j], bs + kk * LDB + wn * 32 + j * 16,
					LDB);
			/* one A fragment live at a time: fewer registers */
#pragma unroll
			for (int i = 0; i < 4; i++) {
				wmma::load_matrix_sync(
					fa, as + (wm * 64 + i * 16) * LDA + kk,
					LDA);
#pragma unroll
				for (int j = 0; j < 2; j++)
					wmma::mma_sync(acc[i][j], fa, fb[j],
						       acc[i][j]);
			}
		}
		if (kt + 1 < ktiles)
			land(cur ^ 1);
		__syncthreads();
	}

	/* epilogue: each fragment through this warp's 16x16 float stage;
	 * lane owns row lane / 2, columns (lane % 2) * 8 .. + 7 */
	float *st = stage[warp];
	const int sr = lane / 2, sc = (lane % 2) * 8;
#pragma unroll
	for (int i = 0; i < 4; i++) {
#pragma unroll
		for (int j = 0; j < 2; j++) {
			wmma::store_matrix_sync(st, acc[i][j], 16,
						wmma::mem_row_major);
			__syncwarp();
			long long r = m0 + wm * 64 + i * 16 + sr;
			int col = n0 + wn * 32 + j * 16 + sc;
			if (r < M && col < N) {
				const float *v = st + sr * 16 + sc;
				uint32_t h[8];
#pragma unroll
				for (int e = 0; e < 8; e++)
					h[e] = kf_float_to_bf16(v[e]);
				uint16_t *cp = C + r * N + col;
				if (VC) { /* N % 8 == 0: col + 7 < N */
					*(uint4 *)cp = make_uint4(
						pair(h[0], h[1]),
						pair(h[2], h[3]),
						pair(h[4], h[5]),
						pair(h[6], h[7]));
				} else {
#pragma unroll
					for (int e = 0; e < 8; e++)
						if (col + e < N)
							cp[e] = (uint16_t)h[e];
				}
			}
			__syncwarp(); /* stage read before it is rewritten */
		}
	}
}

template <bool VA, bool VB>
static void launch_c(bool vc, dim3 g, const uint16_t *a, const uint16_t *b,
		     uint16_t *c, int m, int n, int k, int tn, cudaStream_t s)
{
	if (vc)
		gemm<VA, VB, true><<<g, THREADS, 0, s>>>(a, b, c, m, n, k, tn);
	else
		gemm<VA, VB, false><<<g, THREADS, 0, s>>>(a, b, c, m, n, k, tn);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	const uint16_t *a = (const uint16_t *)in[0].data;
	const uint16_t *b = (const uint16_t *)in[1].data;
	uint16_t *c = (uint16_t *)out[0].data;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	cudaStream_t s = (cudaStream_t)stream;

	bool va = k % 8 == 0 && ((uintptr_t)a & 15) == 0;
	bool vb = n % 8 == 0 && ((uintptr_t)b & 15) == 0;
	bool vc = n % 8 == 0 && ((uintptr_t)c & 15) == 0;
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
