/*
 * reference.cu: attention/gqa on the cuda backend, the host reference's
 * computation on the device. Grouped-query, causal: query head h
 * reads kv head h / (H / HKV).
 * One thread per query row: each kept key's score q.k / sqrt(D) (products
 * of 16-bit values, exact in float, summed in double; no score modification), a pass for
 * the max, a pass for exp(s - max), its sum and the weighted rows of v, in
 * double; only the output is rounded to bfloat16. A row that keeps no key is 0.
 */
#include <math.h>
#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define SMEM_MAX 49152 /* dynamic shared memory without an opt-in */

#define HD __host__ __device__ static

/* whether query position i attends to key position j */
HD bool keep(int64_t i, int64_t j)
{
	return j <= i;
}

/* the score of head h of H, query i, key j, from the scaled dot s */
HD double mod(double s, int64_t h, int64_t H, int64_t i, int64_t j)
{
	(void)h;
	(void)H;
	(void)i;
	(void)j;
	return s;
}

/* q, o [B, H, S, D]; k, v [B, HKV, S, D] */
struct geo {
	int64_t B, H, HKV, S, D;
};
HD int64_t nseq(const struct geo *g) { return g->B; }
HD void seq(const struct geo *g, const int32_t *lens, const int32_t *ctx,
	    int64_t b, int64_t *start, int64_t *sq, int64_t *skv)
{
	(void)lens;
	(void)ctx;
	(void)b;
	*start = 0;
	*sq = *skv = g->S;
}
HD int64_t qrow(const struct geo *g, int64_t b, int64_t start, int64_t i,
		int64_t h)
{
	(void)start;
	return ((b * g->H + h) * g->S + i) * g->D;
}
HD int64_t krow(const struct geo *g, const int32_t *bt, int64_t b,
		int64_t start, int64_t j, int64_t hk)
{
	(void)bt;
	(void)start;
	return ((b * g->HKV + hk) * g->S + j) * g->D;
}

/*
 * Thread t of a block of `rows` owns query row (b, h, i), numbered
 * ((b * H) + h) * rows_per + i over every sequence's possible rows; rows
 * past a sequence's own end do nothing. Its q row (float) and its D
 * accumulators (double) live in dynamic shared memory, column t of
 * [D][rows] arrays that this thread alone touches.
 */
__global__ static void ref(struct geo g, const uint16_t *q,
			   const uint16_t *k, const uint16_t *v, uint16_t *o,
			   const int32_t *lens, const int32_t *ctx,
			   const int32_t *bt, int64_t rows_per, int64_t n,
			   int rows)
{
	extern __shared__ double dyn[];
	double *acc = dyn;			   /* [D][rows] */
	float *qs = (float *)(dyn + g.D * rows); /* [D][rows] */
	int64_t t = threadIdx.x, id = (int64_t)blockIdx.x * rows + t;
	if (id >= n)
		return;
	int64_t i = id % rows_per, bh = id / rows_per;
	int64_t b = bh / g.H, h = bh % g.H, D = g.D;
	int64_t start, sq, skv;
	seq(&g, lens, ctx, b, &start, &sq, &skv);
	if (i >= sq)
		return;
	int64_t hk = h / (g.H / g.HKV), qpos = i + skv - sq;
	double scale = 1.0 / sqrt((double)D);
	const uint16_t *qr = q + qrow(&g, b, start, i, h);
	for (int64_t d = 0; d < D; d++)
		qs[d * rows + t] = kf_bf16_to_float(qr[d]);

	double max = -INFINITY;
	for (int64_t j = 0; j < skv; j++) {
		if (!keep(qpos, j))
			continue;
		const uint16_t *kr = k + krow(&g, bt, b, start, j, hk);
		double dot = 0.0;
		for (int64_t d = 0; d < D; d++)
			dot += (double)(qs[d * rows + t] * kf_bf16_to_float(kr[d]));
		double s = mod(dot * scale, h, g.H, qpos, j);
		if (s > max)
			max = s;
	}
	uint16_t *orow = o + qrow(&g, b, start, i, h);
	if (max == -INFINITY) {
		for (int64_t d = 0; d < D; d++)
			orow[d] = kf_float_to_bf16(0.0f);
		return;
	}
	for (int64_t d = 0; d < D; d++)
		acc[d * rows + t] = 0.0;
	double sum = 0.0;
	for (int64_t j = 0; j < skv; j++) {
		if (!keep(qpos, j))
			continue;
		const uint16_t *kr = k + krow(&g, bt, b, start, j, hk);
		const uint16_t *vr = v + krow(&g, bt, b, start, j, hk);
		double dot = 0.0;
		for (int64_t d = 0; d < D; d++)
			dot += (double)(qs[d * rows + t] * kf_bf16_to_float(kr[d]));
		double e = exp(mod(dot * scale, h, g.H, qpos, j) - max);
		sum += e;
		for (int64_t d = 0; d < D; d++)
			acc[d * rows + t] += e * (double)kf_bf16_to_float(vr[d]);
	}
	for (int64_t d = 0; d < D; d++)
		orow[d] = kf_float_to_bf16((float)(acc[d * rows + t] / sum));
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	struct geo g = {in[0].shape[0], in[0].shape[1], in[1].shape[1],
			in[0].shape[2], in[0].shape[3]};
	const int32_t *lens = NULL, *ctx = NULL;
	const int32_t *bt = NULL;
	/* rows per block: 12 bytes of shared memory per (row, d) */
	int rows = (int)(SMEM_MAX / (12 * g.D));
	rows = rows >= 64 ? 64 : rows >= 32 ? 32 : rows;
	if (rows < 1)
		return 2;
	int64_t rows_per = g.S, n = nseq(&g) * g.H * rows_per;
	ref<<<(unsigned)((n + rows - 1) / rows), (unsigned)rows,
	      (size_t)(12 * g.D * rows), (cudaStream_t)stream>>>(
	    g, (const uint16_t *)in[0].data, (const uint16_t *)in[1].data,
	    (const uint16_t *)in[2].data, (uint16_t *)out[0].data, lens, ctx,
	    bt, rows_per, n, rows);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
