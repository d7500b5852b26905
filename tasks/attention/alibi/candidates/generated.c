/*
 * generated.c: attention variant 'alibi' for task attention/alibi, written by kforge attention gen
 * from its spec (docs/attention.md): kforge's flash-style template,
 * host C: the cuda kernel's tiles, skipped tiles and online softmax,
 * scalar, with P rounded to 16 bits as the tensor cores take it.
 *   dtype float16, head dim 64, heads 16 / kv heads 16 (group 1), layout contiguous
 *   mask: causal
 *   score_mod: score - alibi_slope(h) * (q_idx - kv_idx)
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/kernel.h>

#define KFA_FN static inline
#define KFA_MASK_NONE 0
#define KFA_MASK_CAUSAL 1
#define KFA_MASK_SLIDING 2
#define KFA_MASK_PREFIX 3
#define KFA_MASK_EXPR 4
#define KFA_MASK 1
#define KFA_MASK_ARG 0
#define KFA_MASK_CAUSAL_DECLARED 0
#define KFA_HAS_MOD 1
#define KFA_BF16 0
#define KFA_D 64
#define KFA_SCALE 0.125f /* 1 / sqrt(KFA_D) */
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
	return (score - (kfa_alibi_slope(h, n_heads) * (q_idx - kv_idx)));
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

/* ---- the host kernel: the cuda kernel's algorithm, scalar ---- */
/* The same tiles (KFA_BM rows of one kv head's group, KFA_BN keys), the
 * same skipped and unmasked tiles, the same online softmax, and P rounded
 * to the 16-bit dtype before P V as the tensor cores take it. */

static float kfa_to_float(uint16_t x)
{
#if KFA_BF16
	return kf_bf16_to_float(x);
#else
	return kf_half_to_float(x);
#endif
}

static uint16_t kfa_round(float x)
{
#if KFA_BF16
	return kf_float_to_bf16(x);
#else
	return kf_float_to_half(x);
#endif
}

/* scratch of one tile */
struct kfa_tile_buf {
	float q[KFA_BM][KFA_D], o[KFA_BM][KFA_D];
	float k[KFA_BN][KFA_D], v[KFA_BN][KFA_D];
	float s[KFA_BN];
	float m[KFA_BM], l[KFA_BM];
	int qpos[KFA_BM], head[KFA_BM];
	long long qro[KFA_BM];
};

/* rows [r0, r0 + KFA_BM) of sequence b, kv head hk */
static void kfa_block(const struct kfa_args *a, struct kfa_tile_buf *w,
		      int b, int hk, int r0)
{
	long long start;
	int sq, skv;
	kfa_seq(a, b, &start, &sq, &skv);
	const int R = sq * KFA_G, qoff = skv - sq;
	const int nr = kfa_imin(KFA_BM, R - r0);
	const float scale = KFA_SCALE;
	for (int x = 0; x < nr; x++) {
		int r = r0 + x, i = r / KFA_G;
		w->head[x] = hk * KFA_G + r % KFA_G;
		w->qpos[x] = i + qoff;
		w->qro[x] = kfa_qrow(a, b, start, i, w->head[x]);
		for (int d = 0; d < KFA_D; d++) {
			w->q[x][d] = kfa_to_float(a->q[w->qro[x] + d]);
			w->o[x][d] = 0.0f;
		}
		w->m[x] = -INFINITY;
		w->l[x] = 0.0f;
	}
	const int qlo = r0 / KFA_G + qoff, qhi = (r0 + nr - 1) / KFA_G + qoff;
	for (int k0 = 0; k0 < skv; k0 += KFA_BN) {
		const int k1 = kfa_imin(k0 + KFA_BN, skv) - 1, nk = k1 - k0 + 1;
		const int cls = kfa_tile(qlo, qhi, k0, k1);
		if (cls == 0)
			continue; /* every pair masked: the tile is skipped */
		for (int j = 0; j < nk; j++) {
			long long off = kfa_krow(a, b, start, k0 + j, hk);
			for (int d = 0; d < KFA_D; d++) {
				w->k[j][d] = kfa_to_float(a->k[off + d]);
				w->v[j][d] = kfa_to_float(a->v[off + d]);
			}
		}
		for (int x = 0; x < nr; x++) {
			float mx = -INFINITY;
			for (int j = 0; j < nk; j++) {
				/* eight partial sums (one vector register);
				   the tensor cores sum in their own order too */
				float part[8] = {0};
				for (int d = 0; d < KFA_D; d += 8)
					for (int e = 0; e < 8; e++)
						part[e] += w->q[x][d + e] *
							   w->k[j][d + e];
				float dot = ((part[0] + part[1]) +
					     (part[2] + part[3])) +
					    ((part[4] + part[5]) +
					     (part[6] + part[7]));
				float v = dot * scale;
				const int kv = k0 + j;
#if KFA_HAS_MOD
				v = kfa_mod(v, b, w->head[x], w->qpos[x], kv,
					    a->H);
#endif
				if (cls != 2 && !kfa_keep(b, w->head[x],
							  w->qpos[x], kv, a->H))
					v = -INFINITY;
				w->s[j] = v;
				mx = fmaxf(mx, v);
			}
			const float mn = fmaxf(w->m[x], mx);
			const float use = mn == -INFINITY ? 0.0f : mn;
			const float alpha = expf(w->m[x] - use);
			w->m[x] = mn;
			w->l[x] *= alpha;
			for (int d = 0; d < KFA_D; d++)
				w->o[x][d] *= alpha;
			for (int j = 0; j < nk; j++) {
				const float p = expf(w->s[j] - use);
				w->l[x] += p;
				const float pr = kfa_to_float(kfa_round(p));
				if (pr == 0.0f)
					continue;
				for (int d = 0; d < KFA_D; d++)
					w->o[x][d] += pr * w->v[j][d];
			}
		}
	}
	for (int x = 0; x < nr; x++) {
		const float inv = w->l[x] > 0.0f ? 1.0f / w->l[x] : 0.0f;
		for (int d = 0; d < KFA_D; d++)
			a->o[w->qro[x] + d] = kfa_round(w->o[x][d] * inv);
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	struct kfa_args a;
	int nseq, rows_max;
	(void)stream;
	memset(&a, 0, sizeof(a));
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
	struct kfa_tile_buf *w = malloc(sizeof(*w));
	if (!w)
		return 1;
#if KFA_LAYOUT == 1
	{ /* rows past the last sequence are padding, written as 0 */
		long long total = 0, T = in[0].shape[0];
		for (int i = 0; i < a.NB; i++)
			total += kfa_imin(kfa_imax(a.lens[i], 0), a.S);
		for (long long e = total * a.H * KFA_D; e < T * a.H * KFA_D; e++)
			a.o[e] = 0;
	}
#endif
	for (int b = 0; b < nseq; b++) {
		long long start;
		int sq, skv;
		kfa_seq(&a, b, &start, &sq, &skv);
		(void)rows_max;
		for (int hk = 0; hk < a.HKV; hk++)
			for (int r0 = 0; r0 < sq * KFA_G; r0 += KFA_BM)
				kfa_block(&a, w, b, hk, r0);
	}
	free(w);
	return 0;
}
