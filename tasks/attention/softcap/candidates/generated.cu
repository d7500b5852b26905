/*
 * generated.cu: attention variant 'softcap' for task attention/softcap, written by kforge attention gen
 * from its spec (docs/attention.md): kforge's flash-style template,
 * tensor cores through mma.sync m16n8k16 (16-bit in, fp32 accumulate),
 * K/V tiles staged in shared memory, online softmax, fully masked tiles skipped.
 *   dtype bfloat16, head dim 128, heads 8 / kv heads 8 (group 1), layout contiguous
 *   mask: none
 *   score_mod: cap * tanh(score / cap)
 */
/* kforge: sm_90a */
#pragma nv_diag_suppress 177 /* unused helpers of other variants */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define KFA_FN __device__ static __forceinline__
#define KFA_MASK_NONE 0
#define KFA_MASK_CAUSAL 1
#define KFA_MASK_SLIDING 2
#define KFA_MASK_PREFIX 3
#define KFA_MASK_EXPR 4
#define KFA_MASK 0
#define KFA_MASK_ARG 0
#define KFA_MASK_CAUSAL_DECLARED 0
#define KFA_HAS_MOD 1
#define KFA_BF16 1
#define KFA_D 128
#define KFA_SCALE 0.0883883476f /* 1 / sqrt(KFA_D) */
#define KFA_G 1 /* query heads per kv head */
#define KFA_LAYOUT 0 /* 0 contiguous, 1 varlen, 2 paged */
#define KFA_BS 1 /* paged: rows per cache block */
#define KFA_NIN 3
#define KFA_BM 64 /* rows per block */
#define KFA_BN 64 /* keys per tile */

/* ---- shared by both backends: the variant's geometry and its mask ---- */
KFA_FN int kfa_imin(int a, int b) { return a < b ? a : b; }
KFA_FN int kfa_imax(int a, int b) { return a > b ? a : b; }
KFA_FN int kfa_iabs(int a) { return a < 0 ? -a : a; }
/* the spec's integers that may leave 32 bits (docs/attention.md): the
   checker has proved they stay within 64 */
KFA_FN long long kfa_lmin(long long a, long long b) { return a < b ? a : b; }
KFA_FN long long kfa_lmax(long long a, long long b) { return a > b ? a : b; }
KFA_FN long long kfa_labs(long long a) { return a < 0 ? -a : a; }
/* ALiBi's slope of head h of n: 2^(-8 (h + 1) / n) (h + 1 in float: no
   integer to overflow, whatever h the spec computes) */
KFA_FN float kfa_alibi_slope(long long h, int n_heads)
{
	return exp2f(-8.0f * ((float)h + 1.0f) / (float)n_heads);
}

/* The tensors and sizes of one call. */
struct kfa_args {
	const uint16_t *q, *k, *v;
	uint16_t *o;
	const int32_t *lens; /* varlen: [NB] sequence lengths */
	const int32_t *bt;   /* paged: [B, maxb] block table */
	const int32_t *ctx;  /* paged: [B] context lengths */
	int H, HKV, S, NB, maxb;
	int vec; /* k and v 16-byte aligned */
};

/* Sequence b: its first row (varlen), its query and key counts. */
KFA_FN void kfa_seq(const struct kfa_args *a, int b, long long *start,
		    int *sq, int *skv)
{
#if KFA_LAYOUT == 0
	(void)b;
	*start = 0;
	*sq = a->S;
	*skv = a->S;
#elif KFA_LAYOUT == 1
	long long s = 0;
	for (int i = 0; i < b; i++)
		s += kfa_imin(kfa_imax(a->lens[i], 0), a->S);
	*start = s;
	*sq = *skv = kfa_imin(kfa_imax(a->lens[b], 0), a->S);
#else
	*start = 0;
	*sq = 1;
	*skv = kfa_imin(kfa_imax(a->ctx[b], 0), a->maxb * KFA_BS);
#endif
}

/* Row i of query head h of sequence b (the output's the same). */
KFA_FN long long kfa_qrow(const struct kfa_args *a, int b, long long start,
			  int i, int h)
{
#if KFA_LAYOUT == 0
	(void)start;
	return (((long long)b * a->H + h) * a->S + i) * KFA_D;
#elif KFA_LAYOUT == 1
	(void)b;
	return ((start + i) * a->H + h) * KFA_D;
#else
	(void)start;
	(void)i;
	return ((long long)b * a->H + h) * KFA_D;
#endif
}

/* Key (and value) j of kv head hk of sequence b. */
KFA_FN long long kfa_krow(const struct kfa_args *a, int b, long long start,
			  int j, int hk)
{
#if KFA_LAYOUT == 0
	(void)start;
	return (((long long)b * a->HKV + hk) * a->S + j) * KFA_D;
#elif KFA_LAYOUT == 1
	(void)b;
	return ((start + j) * a->HKV + hk) * KFA_D;
#else
	(void)start;
	long long blk = a->bt[(long long)b * a->maxb + j / KFA_BS];
	return ((blk * KFA_BS + j % KFA_BS) * a->HKV + hk) * KFA_D;
#endif
}

/* Whether query position q may attend to key kv (the named masks). */
KFA_FN bool kfa_named_keep(int q, int kv)
{
#if KFA_MASK == KFA_MASK_CAUSAL
	return kv <= q;
#elif KFA_MASK == KFA_MASK_SLIDING
	return kv <= q && q - kv < KFA_MASK_ARG;
#elif KFA_MASK == KFA_MASK_PREFIX
	return kv < KFA_MASK_ARG || kv <= q;
#else
	(void)q;
	(void)kv;
	return true;
#endif
}

/*
 * The tile of query positions [qlo, qhi] and keys [k0, k1]: 0 when every
 * pair is masked (skipped), 2 when none is (no per-element mask), else 1.
 */
KFA_FN int kfa_tile(int qlo, int qhi, int k0, int k1)
{
#if KFA_MASK == KFA_MASK_NONE
	(void)qlo;
	(void)qhi;
	(void)k0;
	(void)k1;
	return 2;
#elif KFA_MASK == KFA_MASK_CAUSAL
	return k0 > qhi ? 0 : k1 <= qlo ? 2 : 1;
#elif KFA_MASK == KFA_MASK_SLIDING
	if (k0 > qhi || qlo - k1 >= KFA_MASK_ARG)
		return 0;
	return k1 <= qlo && qhi - k0 < KFA_MASK_ARG ? 2 : 1;
#elif KFA_MASK == KFA_MASK_PREFIX
	if (k0 >= KFA_MASK_ARG && k0 > qhi)
		return 0;
	return k1 < KFA_MASK_ARG || k1 <= qlo ? 2 : 1;
#elif KFA_MASK_CAUSAL_DECLARED
	(void)qlo;
	(void)k1;
	return k0 > qhi ? 0 : 1;
#else
	(void)qlo;
	(void)qhi;
	(void)k0;
	(void)k1;
	return 1;
#endif
}

/* ---- the spec's score modification and mask ---- */
KFA_FN float kfa_mod(float score, int b, int h, int q_idx, int kv_idx,
		      int n_heads)
{
	(void)score;
	(void)b;
	(void)h;
	(void)q_idx;
	(void)kv_idx;
	(void)n_heads;
	return (30 * tanhf((score / 30)));
}

KFA_FN bool kfa_keep(int b, int h, int q_idx, int kv_idx, int n_heads)
{
	(void)b;
	(void)h;
	(void)q_idx;
	(void)kv_idx;
	(void)n_heads;
	return kfa_named_keep(q_idx, kv_idx);
}

/* ---- the cuda kernel: flash-style, tensor cores through mma.sync ---- */
#define KFA_WARPS 4
#define KFA_THREADS (32 * KFA_WARPS)
#define KFA_LDS (KFA_D + 8) /* shared row pitch in halves: 16-byte rows, skewed banks */
#define KFA_LOG2E 1.4426950408889634f
#define KFA_FULLMASK 0xffffffffu

/* two 16-bit values, lo in the low half (the lower column or key) */
KFA_FN uint32_t kfa_pack_bits(uint16_t lo, uint16_t hi)
{
	return (uint32_t)lo | ((uint32_t)hi << 16);
}

KFA_FN uint32_t kfa_pack_f(float lo, float hi)
{
#if KFA_BF16
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
#else
	__half2 v = __floats2half2_rn(lo, hi);
#endif
	return *(uint32_t *)&v;
}

KFA_FN uint16_t kfa_round(float x)
{
#if KFA_BF16
	return __bfloat16_as_ushort(__float2bfloat16_rn(x));
#else
	return __half_as_ushort(__float2half_rn(x));
#endif
}

/* c += a (16x16, row) * b (16x8, col), 16-bit inputs, fp32 accumulate */
KFA_FN void kfa_mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
#if KFA_BF16
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
#else
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
#endif
		     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
		     "{%0, %1, %2, %3};\n"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
		       "r"(b1));
}

KFA_FN uint32_t kfa_ld2(const uint16_t *p)
{
	return kfa_pack_bits(p[0], p[1]);
}

/* sK/sV rows [0, KFA_BN) = keys k0.. of kv head hk; zero past skv */
KFA_FN void kfa_stage(const struct kfa_args *a, uint16_t (*sK)[KFA_LDS],
		      uint16_t (*sV)[KFA_LDS], int b, long long start, int hk,
		      int k0, int skv)
{
	const int chunks = KFA_BN * (KFA_D / 8);
	for (int idx = threadIdx.x; idx < chunks; idx += KFA_THREADS) {
		int row = idx / (KFA_D / 8), c = (idx % (KFA_D / 8)) * 8;
		int j = k0 + row;
		uint16_t *dk = &sK[row][c], *dv = &sV[row][c];
		if (j >= skv) {
			*(uint4 *)dk = make_uint4(0, 0, 0, 0);
			*(uint4 *)dv = make_uint4(0, 0, 0, 0);
			continue;
		}
		long long off = kfa_krow(a, b, start, j, hk) + c;
		if (a->vec) {
			*(uint4 *)dk = *(const uint4 *)(a->k + off);
			*(uint4 *)dv = *(const uint4 *)(a->v + off);
		} else {
			for (int e = 0; e < 8; e++) {
				dk[e] = a->k[off + e];
				dv[e] = a->v[off + e];
			}
		}
	}
}

/*
 * One block: KFA_BM rows of one (sequence b, kv head hk); rows r count
 * (query i, head in group g) pairs as r = i * KFA_G + g, so one staged K/V
 * tile serves every query head of the group. Warp w owns rows
 * 16 w .. 16 w + 15; lane (gq = lane / 4, t = lane % 4) holds rows gq and
 * gq + 8 of the warp's score and output fragments.
 */
__global__ void __launch_bounds__(KFA_THREADS)
    kfa_attention(const struct kfa_args a)
{
	__shared__ __align__(16) uint16_t sK[KFA_BN][KFA_LDS];
	__shared__ __align__(16) uint16_t sV[KFA_BN][KFA_LDS];
	const int b = blockIdx.z, hk = blockIdx.y, r0 = blockIdx.x * KFA_BM;
	long long start;
	int sq, skv;
	kfa_seq(&a, b, &start, &sq, &skv);
	const int R = sq * KFA_G;
	if (r0 >= R)
		return;
	const int qoff = skv - sq;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	const int gq = lane / 4, t = lane % 4;
	const float scale = KFA_SCALE;

	/* this lane's two rows: query position, head, validity */
	int qpos[2], head[2];
	bool valid[2];
	long long qro[2];
	for (int x = 0; x < 2; x++) {
		int r = r0 + warp * 16 + gq + 8 * x;
		valid[x] = r < R;
		int i = valid[x] ? r / KFA_G : 0;
		head[x] = hk * KFA_G + (valid[x] ? r % KFA_G : 0);
		qpos[x] = i + qoff;
		qro[x] = kfa_qrow(&a, b, start, i, head[x]);
	}

	/* Q as A fragments, held in registers for the whole key loop */
	uint32_t qa[KFA_D / 16][4];
#pragma unroll
	for (int kk = 0; kk < KFA_D / 16; kk++) {
		int c0 = kk * 16 + t * 2, c1 = c0 + 8;
		qa[kk][0] = valid[0] ? kfa_ld2(a.q + qro[0] + c0) : 0u;
		qa[kk][1] = valid[1] ? kfa_ld2(a.q + qro[1] + c0) : 0u;
		qa[kk][2] = valid[0] ? kfa_ld2(a.q + qro[0] + c1) : 0u;
		qa[kk][3] = valid[1] ? kfa_ld2(a.q + qro[1] + c1) : 0u;
	}

	float o[KFA_D / 8][4];
#pragma unroll
	for (int dn = 0; dn < KFA_D / 8; dn++)
		o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.0f;
	float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

	const int rlast = min(r0 + KFA_BM, R) - 1;
	const int qlo = r0 / KFA_G + qoff, qhi = rlast / KFA_G + qoff;
	for (int k0 = 0; k0 < skv; k0 += KFA_BN) {
		const int k1 = min(k0 + KFA_BN, skv) - 1;
		const int cls = kfa_tile(qlo, qhi, k0, k1);
		if (cls == 0)
			continue; /* every pair masked: the tile is skipped */
		const bool full = cls == 2 && k0 + KFA_BN <= skv;
		__syncthreads();
		kfa_stage(&a, sK, sV, b, start, hk, k0, skv);
		__syncthreads();

		/* S = Q K^T: KFA_BN / 8 fragments of 16 x 8 */
		float s[KFA_BN / 8][4];
#pragma unroll
		for (int nt = 0; nt < KFA_BN / 8; nt++) {
			s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
			for (int kk = 0; kk < KFA_D / 16; kk++) {
				const uint16_t *kr = &sK[nt * 8 + gq][kk * 16 + t * 2];
				kfa_mma(s[nt], qa[kk], *(const uint32_t *)kr,
					*(const uint32_t *)(kr + 8));
			}
		}

		/* scale, modify, mask; the rows' maxima */
		float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
		for (int nt = 0; nt < KFA_BN / 8; nt++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int x = e >> 1;
				const int kv = k0 + nt * 8 + t * 2 + (e & 1);
				float v = s[nt][e] * scale;
#if KFA_HAS_MOD
				v = kfa_mod(v, b, head[x], qpos[x], kv, a.H);
#endif
				if (!full &&
				    (kv >= skv ||
				     !kfa_keep(b, head[x], qpos[x], kv, a.H)))
					v = -INFINITY;
				s[nt][e] = v;
				mx[x] = fmaxf(mx[x], v);
			}

		/* online softmax: each row's four lanes agree on its max */
		float alpha[2], use[2];
#pragma unroll
		for (int x = 0; x < 2; x++) {
			mx[x] = fmaxf(mx[x], __shfl_xor_sync(KFA_FULLMASK, mx[x], 1));
			mx[x] = fmaxf(mx[x], __shfl_xor_sync(KFA_FULLMASK, mx[x], 2));
			const float mn = fmaxf(m[x], mx[x]);
			use[x] = mn == -INFINITY ? 0.0f : mn;
			alpha[x] = exp2f((m[x] - use[x]) * KFA_LOG2E);
			m[x] = mn;
			l[x] *= alpha[x];
		}
#pragma unroll
		for (int nt = 0; nt < KFA_BN / 8; nt++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int x = e >> 1;
				const float p =
				    exp2f((s[nt][e] - use[x]) * KFA_LOG2E);
				s[nt][e] = p;
				l[x] += p;
			}
#pragma unroll
		for (int dn = 0; dn < KFA_D / 8; dn++) {
			o[dn][0] *= alpha[0];
			o[dn][1] *= alpha[0];
			o[dn][2] *= alpha[1];
			o[dn][3] *= alpha[1];
		}

		/* O += P V: P straight from the score fragments */
#pragma unroll
		for (int ks = 0; ks < KFA_BN / 16; ks++) {
			uint32_t pa[4];
			pa[0] = kfa_pack_f(s[2 * ks][0], s[2 * ks][1]);
			pa[1] = kfa_pack_f(s[2 * ks][2], s[2 * ks][3]);
			pa[2] = kfa_pack_f(s[2 * ks + 1][0], s[2 * ks + 1][1]);
			pa[3] = kfa_pack_f(s[2 * ks + 1][2], s[2 * ks + 1][3]);
			const int kr = ks * 16 + t * 2;
#pragma unroll
			for (int dn = 0; dn < KFA_D / 8; dn++) {
				const int c = dn * 8 + gq;
				uint32_t b0 = kfa_pack_bits(sV[kr][c], sV[kr + 1][c]);
				uint32_t b1 = kfa_pack_bits(sV[kr + 8][c],
							    sV[kr + 9][c]);
				kfa_mma(o[dn], pa, b0, b1);
			}
		}
	}

	/* the rows' sums over their four lanes; a row that kept no key is 0 */
#pragma unroll
	for (int x = 0; x < 2; x++) {
		l[x] += __shfl_xor_sync(KFA_FULLMASK, l[x], 1);
		l[x] += __shfl_xor_sync(KFA_FULLMASK, l[x], 2);
	}
#pragma unroll
	for (int x = 0; x < 2; x++) {
		if (!valid[x])
			continue;
		const float inv = l[x] > 0.0f ? 1.0f / l[x] : 0.0f;
		uint16_t *orow = a.o + qro[x];
#pragma unroll
		for (int dn = 0; dn < KFA_D / 8; dn++) {
			const int c = dn * 8 + t * 2;
			orow[c] = kfa_round(o[dn][2 * x] * inv);
			orow[c + 1] = kfa_round(o[dn][2 * x + 1] * inv);
		}
	}
}

#if KFA_LAYOUT == 1
/* varlen: rows past the last sequence are padding, written as 0 */
__global__ void kfa_zero_tail(const int32_t *lens, int nb, int S,
			      uint16_t *o, long long T, long long row_elems)
{
	__shared__ long long total;
	if (threadIdx.x == 0) {
		long long s = 0;
		for (int i = 0; i < nb; i++)
			s += kfa_imin(kfa_imax(lens[i], 0), S);
		total = s;
	}
	__syncthreads();
	long long n = T * row_elems;
	for (long long e = total * row_elems +
			  (long long)blockIdx.x * blockDim.x + threadIdx.x;
	     e < n; e += (long long)gridDim.x * blockDim.x)
		o[e] = 0;
}
#endif

KF_EXTERN_C int kf_entry(const DLTensor *in, int n_in, DLTensor *out,
			 int n_out, void *stream)
{
	struct kfa_args a;
	memset(&a, 0, sizeof(a));
	int nseq, rows_max;
	if (n_out != 1 || n_in != KFA_NIN)
		return 2;
#if KFA_LAYOUT == 0
	/* q [B, H, S, D], k and v [B, HKV, S, D] */
	if (in[0].ndim != 4 || in[1].ndim != 4 || in[0].shape[3] != KFA_D)
		return 2;
	nseq = (int)in[0].shape[0];
	a.H = (int)in[0].shape[1];
	a.S = (int)in[0].shape[2];
	a.HKV = (int)in[1].shape[1];
	rows_max = a.S * KFA_G;
#elif KFA_LAYOUT == 1
	/* q [T, H, D], k and v [T, HKV, D], lens [NB]; T = NB * S */
	if (in[0].ndim != 3 || in[1].ndim != 3 || in[0].shape[2] != KFA_D)
		return 2;
	a.NB = nseq = (int)in[3].shape[0];
	a.H = (int)in[0].shape[1];
	a.HKV = (int)in[1].shape[1];
	a.S = (int)(in[0].shape[0] / nseq);
	a.lens = (const int32_t *)in[3].data;
	rows_max = a.S * KFA_G;
#else
	/* q [B, H, D], k and v caches [NBLK, BS, HKV, D], block table
	   [B, MAXB], context lengths [B] */
	if (in[0].ndim != 3 || in[1].ndim != 4 || in[0].shape[2] != KFA_D ||
	    in[1].shape[1] != KFA_BS)
		return 2;
	nseq = (int)in[0].shape[0];
	a.H = (int)in[0].shape[1];
	a.HKV = (int)in[1].shape[2];
	a.maxb = (int)in[3].shape[1];
	a.bt = (const int32_t *)in[3].data;
	a.ctx = (const int32_t *)in[4].data;
	rows_max = KFA_G;
#endif
	if (a.HKV * KFA_G != a.H)
		return 3; /* the spec's group size is H / HKV */
	a.q = (const uint16_t *)in[0].data;
	a.k = (const uint16_t *)in[1].data;
	a.v = (const uint16_t *)in[2].data;
	a.o = (uint16_t *)out[0].data;
	a.vec = ((uintptr_t)a.k % 16 == 0) && ((uintptr_t)a.v % 16 == 0);
	cudaStream_t st = (cudaStream_t)stream;
#if KFA_LAYOUT == 1
	kfa_zero_tail<<<256, 256, 0, st>>>(a.lens, a.NB, a.S, a.o,
					    in[0].shape[0],
					    (long long)a.H * KFA_D);
#endif
	dim3 grid((unsigned)((rows_max + KFA_BM - 1) / KFA_BM),
		  (unsigned)a.HKV, (unsigned)nseq);
	if (grid.x > 0)
		kfa_attention<<<grid, KFA_THREADS, 0, st>>>(a);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
