/*
 * Fast attention/sdpa (cuda): fused flash attention, 64 query rows per block,
 * K/V tiles in shared memory, q k^T and p v on tensor cores (WMMA, fp16 in,
 * fp32 accumulate), online softmax with exp2; D > 128 takes a SIMT fallback.
 */
#include <math.h>
#include <stdint.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <kforge/kernel.h>

using namespace nvcuda;

#define BM 64 /* query rows per block */
#define WARPS 4
#define THREADS (32 * WARPS)
#define FULL 0xffffffffu
#define LOG2E 1.4426950408889634f

/*
 * KD: head dim in 16-column fragments (D <= 16 KD, zero padded). BN keys per
 * tile, so that shared memory stays under 48 KiB. Pitches (in elements) keep
 * every WMMA pointer 32-byte aligned and ldm a multiple of 8 halves / 4
 * floats, and skew rows across banks.
 */
template <int KD> struct cfg {
	static constexpr int DP = 16 * KD;	     /* padded head dim */
	static constexpr int BN = KD <= 4 ? 64 : 32; /* keys per tile */
	static constexpr int LDK = DP + 8;	     /* q, k, v rows (half) */
	static constexpr int LDS = BN + 4;	     /* scores (float) */
	static constexpr int LDP = BN + 8;	     /* probabilities (half) */
};

/*
 * dst[r][c] (pitch ld) = src row (row0 + r) column c for r < nrows,
 * c < DP; zero past S rows or D columns. VEC: D % 8 == 0 and src 16-byte
 * aligned, so 8-column chunks are whole and aligned.
 */
template <int KD, bool VEC>
__device__ static __forceinline__ void load_rows(__half *dst, int ld,
						 const uint16_t *src,
						 int row0, int nrows, int S,
						 int D)
{
	constexpr int DP = cfg<KD>::DP;
	if (VEC) {
		constexpr int CH = DP / 8; /* 16-byte chunks per row */
		for (int e = threadIdx.x; e < nrows * CH; e += THREADS) {
			int r = e / CH, c = (e % CH) * 8;
			uint4 val = make_uint4(0u, 0u, 0u, 0u);
			const uint16_t *p = src + (long long)(row0 + r) * D + c;
			if (row0 + r < S && c < D)
				val = __ldg((const uint4 *)p);
			*(uint4 *)(dst + r * ld + c) = val;
		}
	} else {
		for (int e = threadIdx.x; e < nrows * DP; e += THREADS) {
			int r = e / DP, c = e % DP;
			uint16_t val = 0;
			if (row0 + r < S && c < D)
				val = src[(long long)(row0 + r) * D + c];
			dst[r * ld + c] = __ushort_as_half(val);
		}
	}
}

template <int KD, bool VEC>
__global__ static void __launch_bounds__(THREADS)
flash(const uint16_t *__restrict__ q, const uint16_t *__restrict__ k,
      const uint16_t *__restrict__ v, uint16_t *__restrict__ o, int S, int D,
      long long nqb, float sl2)
{
	typedef cfg<KD> C;
	constexpr int BN = C::BN, LDK = C::LDK, LDS = C::LDS, LDP = C::LDP;
	/* K tile then V tile; at the start the Q tile (BM <= 2 BN rows) */
	__shared__ __align__(128) __half kv[2 * BN * LDK];
	__shared__ __align__(128) float sc[WARPS][16 * LDS];
	__shared__ __align__(128) __half pr[WARPS][16 * LDP];

	int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	long long bh = blockIdx.x / nqb;
	int q0 = (int)(blockIdx.x % nqb) * BM;
	long long base = bh * (long long)S * D;
	const uint16_t *qh = q + base, *kh = k + base, *vh = v + base;
	__half *Ks = kv, *Vs = kv + BN * LDK;
	float *scw = sc[warp];
	__half *prw = pr[warp];

	/* the warp's 16 query rows as KD a-fragments, kept in registers */
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>
	    qf[KD];
	load_rows<KD, VEC>(kv, LDK, qh, q0, BM, S, D);
	__syncthreads();
#pragma unroll
	for (int f = 0; f < KD; f++)
		wmma::load_matrix_sync(qf[f], kv + warp * 16 * LDK + f * 16,
				       LDK);
	__syncthreads(); /* the Q tile is overwritten by K and V below */

	/* softmax state: lane owns row r = lane / 2 of the warp's 16 and the
	 * score columns 2c + hh; output columns f * 16 + hh * 8 + e */
	int r = lane >> 1, hh = lane & 1;
	float m_run = -INFINITY, l_run = 0.0f;
	float oacc[KD][8];
#pragma unroll
	for (int f = 0; f < KD; f++)
#pragma unroll
		for (int e = 0; e < 8; e++)
			oacc[f][e] = 0.0f;

	for (int j0 = 0; j0 < S; j0 += BN) {
		load_rows<KD, VEC>(Ks, LDK, kh, j0, BN, S, D);
		load_rows<KD, VEC>(Vs, LDK, vh, j0, BN, S, D);
		__syncthreads();

		/* scores s = q k^T: 16 x BN per warp, into scw */
#pragma unroll
		for (int nf = 0; nf < BN / 16; nf++) {
			wmma::fragment<wmma::accumulator, 16, 16, 16, float>
			    sacc;
			wmma::fill_fragment(sacc, 0.0f);
#pragma unroll
			for (int f = 0; f < KD; f++) {
				wmma::fragment<wmma::matrix_b, 16, 16, 16,
					       __half, wmma::col_major>
				    kf;
				wmma::load_matrix_sync(
				    kf, Ks + nf * 16 * LDK + f * 16, LDK);
				wmma::mma_sync(sacc, qf[f], kf, sacc);
			}
			wmma::store_matrix_sync(scw + nf * 16, sacc, LDS,
						wmma::mem_row_major);
		}
		__syncwarp();

		/* online softmax of row r over this tile (base-2 units) */
		const float *srow = scw + r * LDS;
		float tmax = -INFINITY;
#pragma unroll 8
		for (int c = 0; c < BN / 2; c++) {
			int col = 2 * c + hh;
			float s = j0 + col < S ? srow[col] * sl2 : -INFINITY;
			tmax = fmaxf(tmax, s);
		}
		tmax = fmaxf(tmax, __shfl_xor_sync(FULL, tmax, 1));
		float m_new = fmaxf(m_run, tmax); /* finite: key j0 exists */
		float alpha = exp2f(m_run - m_new); /* first tile: 0 */
		float rsum = 0.0f;
#pragma unroll 8
		for (int c = 0; c < BN / 2; c++) {
			int col = 2 * c + hh;
			float s = j0 + col < S ? srow[col] * sl2 : -INFINITY;
			__half p = __float2half_rn(exp2f(s - m_new));
			prw[r * LDP + col] = p;
			rsum += __half2float(p); /* the sum of what p v uses */
		}
		rsum += __shfl_xor_sync(FULL, rsum, 1);
		l_run = l_run * alpha + rsum;
		m_run = m_new;
		__syncwarp();

		/* o = alpha o + p v, one 16-column fragment at a time, staged
		 * through scw (its scores are consumed) */
#pragma unroll
		for (int f = 0; f < KD; f++) {
			wmma::fragment<wmma::accumulator, 16, 16, 16, float>
			    pacc;
			wmma::fill_fragment(pacc, 0.0f);
#pragma unroll
			for (int kb = 0; kb < BN / 16; kb++) {
				wmma::fragment<wmma::matrix_a, 16, 16, 16,
					       __half, wmma::row_major>
				    pf;
				wmma::fragment<wmma::matrix_b, 16, 16, 16,
					       __half, wmma::row_major>
				    vf;
				wmma::load_matrix_sync(pf, prw + kb * 16, LDP);
				wmma::load_matrix_sync(
				    vf, Vs + kb * 16 * LDK + f * 16, LDK);
				wmma::mma_sync(pacc, pf, vf, pacc);
			}
			wmma::store_matrix_sync(scw, pacc, LDS,
						wmma::mem_row_major);
			__syncwarp();
			float4 s0 = *(const float4 *)(scw + r * LDS + hh * 8);
			float4 s1 =
			    *(const float4 *)(scw + r * LDS + hh * 8 + 4);
			float st[8] = {s0.x, s0.y, s0.z, s0.w,
				       s1.x, s1.y, s1.z, s1.w};
#pragma unroll
			for (int e = 0; e < 8; e++)
				oacc[f][e] = oacc[f][e] * alpha + st[e];
			__syncwarp();
		}
		__syncthreads(); /* Ks, Vs are reloaded next tile */
	}

	int qi = q0 + warp * 16 + r;
	if (qi >= S)
		return;
	float inv = 1.0f / l_run;
	uint16_t *orow = o + base + (long long)qi * D;
#pragma unroll
	for (int f = 0; f < KD; f++) {
		int d0 = f * 16 + hh * 8;
		if (VEC) {
			if (d0 < D) { /* D % 8 == 0: all 8 columns exist */
				uint32_t w[4];
#pragma unroll
				for (int e = 0; e < 4; e++) {
					__half2 pair = __floats2half2_rn(
					    oacc[f][2 * e] * inv,
					    oacc[f][2 * e + 1] * inv);
					w[e] = *(uint32_t *)&pair;
				}
				*(uint4 *)(orow + d0) =
				    make_uint4(w[0], w[1], w[2], w[3]);
			}
		} else {
#pragma unroll
			for (int e = 0; e < 8; e++)
				if (d0 + e < D)
					orow[d0 + e] = __half_as_ushort(
					    __float2half_rn(oacc[f][e] * inv));
		}
	}
}

/* Head dims above 128: one warp per query row, float, two passes. */
__device__ static __forceinline__ float h2f(uint16_t h)
{
	return __half2float(__ushort_as_half(h));
}

__device__ static __forceinline__ float dot(const uint16_t *qi,
					   const uint16_t *kj, long long D,
					   int lane)
{
	float part = 0.0f;
	for (long long d = lane; d < D; d += 32)
		part += h2f(qi[d]) * h2f(kj[d]);
	for (int o = 16; o > 0; o /= 2)
		part += __shfl_xor_sync(FULL, part, o);
	return part;
}

__global__ static void __launch_bounds__(THREADS)
sdpa_rows(const uint16_t *q, const uint16_t *k, const uint16_t *v,
	  uint16_t *o, long long rows, long long S, long long D, float scale)
{
	int lane = threadIdx.x % 32;
	for (long long r = blockIdx.x * (long long)WARPS + threadIdx.x / 32;
	     r < rows; r += (long long)gridDim.x * WARPS) {
		long long base = (r / S) * S * D;
		const uint16_t *qi = q + r * D;
		const uint16_t *kh = k + base, *vh = v + base;
		float max = -INFINITY;
		for (long long j = 0; j < S; j++)
			max = fmaxf(max, dot(qi, kh + j * D, D, lane) * scale);
		for (long long d0 = 0; d0 < D; d0 += 128) {
			float acc[4] = {0.0f}, sum = 0.0f;
			for (long long j = 0; j < S; j++) {
				float p = __expf(
				    dot(qi, kh + j * D, D, lane) * scale - max);
				sum += p;
				const uint16_t *vj = vh + j * D;
				for (int u = 0; u < 4; u++) {
					long long d = d0 + lane + 32 * u;
					if (d < D)
						acc[u] += p * h2f(vj[d]);
				}
			}
			for (int u = 0; u < 4; u++) {
				long long d = d0 + lane + 32 * u;
				if (d < D)
					o[r * D + d] = __half_as_ushort(
					    __float2half_rn(acc[u] / sum));
			}
		}
	}
}

template <int KD>
static void launch(const uint16_t *q, const uint16_t *k, const uint16_t *v,
		   uint16_t *o, long long BH, int S, int D, bool vec,
		   cudaStream_t s)
{
	long long nqb = (S + BM - 1) / BM;
	float sl2 = LOG2E / sqrtf((float)D);
	unsigned grid = (unsigned)(BH * nqb);
	if (vec)
		flash<KD, true><<<grid, THREADS, 0, s>>>(q, k, v, o, S, D, nqb,
							 sl2);
	else
		flash<KD, false><<<grid, THREADS, 0, s>>>(q, k, v, o, S, D, nqb,
							  sl2);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	const uint16_t *q = (const uint16_t *)in[0].data;
	const uint16_t *k = (const uint16_t *)in[1].data;
	const uint16_t *v = (const uint16_t *)in[2].data;
	uint16_t *o = (uint16_t *)out[0].data;
	long long BH = in[0].shape[0] * in[0].shape[1];
	long long S = in[0].shape[2], D = in[0].shape[3];
	cudaStream_t s = (cudaStream_t)stream;
	bool vec = D % 8 == 0 &&
		   (((uintptr_t)q | (uintptr_t)k | (uintptr_t)v |
		     (uintptr_t)o) & 15) == 0;
	int kd = (int)((D + 15) / 16);

	if (S > 0x7fffffffLL || BH * ((S + BM - 1) / BM) > 0x7fffffffLL)
		return 2;
	switch (D > 128 ? 0 : kd) {
	case 1:
		launch<1>(q, k, v, o, BH, (int)S, (int)D, vec, s);
		break;
	case 2:
		launch<2>(q, k, v, o, BH, (int)S, (int)D, vec, s);
		break;
	case 3:
		launch<3>(q, k, v, o, BH, (int)S, (int)D, vec, s);
		break;
	case 4:
		launch<4>(q, k, v, o, BH, (int)S, (int)D, vec, s);
		break;
	case 5:
		launch<5>(q, k, v, o, BH, (int)S, (int)D, vec, s);
		break;
	case 6:
		launch<6>(q, k, v, o, BH, (int)S, (int)D, vec, s);
		break;
	case 7:
		launch<7>(q, k, v, o, BH, (int)S, (int)D, vec, s);
		break;
	case 8:
		launch<8>(q, k, v, o, BH, (int)S, (int)D, vec, s);
		break;
	default: {
		long long rows = BH * S, blocks = (rows + WARPS - 1) / WARPS;
		sdpa_rows<<<(unsigned)(blocks < (1LL << 20) ? blocks
							    : (1LL << 20)),
			    THREADS, 0, s>>>(q, k, v, o, rows, S, D,
					     1.0f / sqrtf((float)D));
	}
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
