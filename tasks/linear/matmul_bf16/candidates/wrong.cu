/*
 * Wrong candidate for linear/matmul_bf16 (cuda): one warp per 16x16 tile of
 * C with WMMA, but the B fragment is declared col_major while the staged
 * tile is row-major, so each 16x16 block of B is used transposed.
 */
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <kforge/kernel.h>

using namespace nvcuda;

#define WARPS 4

__global__ static void gemm(const uint16_t *a, const uint16_t *b,
			    uint16_t *c, int m, int n, int k, int tiles_n,
			    long long tiles)
{
	__shared__ __align__(32) uint16_t as[WARPS][16 * 16];
	__shared__ __align__(32) uint16_t bs[WARPS][16 * 16];
	__shared__ __align__(32) float cs[WARPS][16 * 16];
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	long long tile = blockIdx.x * (long long)WARPS + warp;
	if (tile >= tiles)
		return; /* whole warps; only warp-level syncs below */
	long long m0 = tile / tiles_n * 16;
	int n0 = (int)(tile % tiles_n) * 16;

	wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16,
		       wmma::row_major>
		fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16,
		       wmma::col_major> /* bug: the tile is row_major */
		fb;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
	wmma::fill_fragment(acc, 0.0f);

	for (int k0 = 0; k0 < k; k0 += 16) {
		for (int e = lane; e < 256; e += 32) {
			int r = e / 16, q = e % 16;
			as[warp][e] = m0 + r < m && k0 + q < k
					      ? a[(m0 + r) * k + k0 + q]
					      : (uint16_t)0;
			long long kr = k0 + r;
			bs[warp][e] = kr < k && n0 + q < n ? b[kr * n + n0 + q]
							   : (uint16_t)0;
		}
		__syncwarp();
		wmma::load_matrix_sync(fa, (const __nv_bfloat16 *)as[warp], 16);
		wmma::load_matrix_sync(fb, (const __nv_bfloat16 *)bs[warp], 16);
		wmma::mma_sync(acc, fa, fb, acc);
		__syncwarp();
	}
	wmma::store_matrix_sync(cs[warp], acc, 16, wmma::mem_row_major);
	__syncwarp();
	for (int e = lane; e < 256; e += 32) {
		int r = e / 16, q = e % 16;
		if (m0 + r < m && n0 + q < n)
			c[(m0 + r) * n + n0 + q] =
				kf_float_to_bf16(cs[warp][e]);
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	int tiles_n = (n + 15) / 16;
	long long tiles = (long long)((m + 15) / 16) * tiles_n;
	gemm<<<(unsigned)((tiles + WARPS - 1) / WARPS), WARPS * 32, 0,
	       (cudaStream_t)stream>>>(
		(const uint16_t *)in[0].data, (const uint16_t *)in[1].data,
		(uint16_t *)out[0].data, m, n, k, tiles_n, tiles);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
