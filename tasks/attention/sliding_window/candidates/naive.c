/*
 * naive.c: attention/sliding_window candidate, straightforward: the reference's loops
 * in float. For every query row, each kept key's score, the row's max
 * subtracted before expf, the weighted sum of the kept rows of v.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <kforge/kernel.h>

#define HD static

#define W 256 /* window */

/* whether query position i attends to key position j */
HD bool keep(int64_t i, int64_t j)
{
	return j <= i && i - j < W;
}

/* the score of head h of H, query i, key j, from the scaled dot s */
HD float mod(float s, int64_t h, int64_t H, int64_t i, int64_t j)
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

/* One query row (query position qpos of head h of H) against the skv keys
 * of its kv head; qf, p and acc are scratch of D, skv and D floats. */
static void attend_row(const struct geo *g, const uint16_t *q,
		       const uint16_t *k, const uint16_t *v, uint16_t *o,
		       const int32_t *bt, int64_t b, int64_t start,
		       int64_t i, int64_t qpos, int64_t skv, int64_t h,
		       float *qf, float *p, float *acc)
{
	int64_t D = g->D, hk = h / (g->H / g->HKV);
	float scale = 1.0f / sqrtf((float)D), max = -INFINITY, sum = 0.0;
	const uint16_t *qr = q + qrow(g, b, start, i, h);
	for (int64_t d = 0; d < D; d++) {
		qf[d] = kf_half_to_float(qr[d]);
		acc[d] = 0.0;
	}
	for (int64_t j = 0; j < skv; j++) {
		p[j] = -INFINITY;
		if (!keep(qpos, j))
			continue;
		const uint16_t *kr = k + krow(g, bt, b, start, j, hk);
		float dot = 0.0;
		for (int64_t d = 0; d < D; d++)
			dot += qf[d] * kf_half_to_float(kr[d]);
		p[j] = mod(dot * scale, h, g->H, qpos, j);
		if (p[j] > max)
			max = p[j];
	}
	uint16_t *orow = o + qrow(g, b, start, i, h);
	if (max == -INFINITY) {
		for (int64_t d = 0; d < D; d++)
			orow[d] = kf_float_to_half(0.0f);
		return;
	}
	for (int64_t j = 0; j < skv; j++) {
		if (p[j] == -INFINITY)
			continue;
		float e = expf(p[j] - max);
		const uint16_t *vr = v + krow(g, bt, b, start, j, hk);
		sum += e;
		for (int64_t d = 0; d < D; d++)
			acc[d] += e * kf_half_to_float(vr[d]);
	}
	for (int64_t d = 0; d < D; d++)
		orow[d] = kf_float_to_half((float)(acc[d] / sum));
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	struct geo g = {in[0].shape[0], in[0].shape[1], in[1].shape[1],
			in[0].shape[2], in[0].shape[3]};
	const uint16_t *q = in[0].data, *k = in[1].data, *v = in[2].data;
	const int32_t *lens = NULL, *ctx = NULL;
	const int32_t *bt = NULL;
	uint16_t *o = out[0].data;
	int64_t kmax = g.S;
	float *scratch = malloc((size_t)(2 * g.D + kmax) * sizeof(float));
	if (!scratch)
		return -1;
	for (int64_t b = 0; b < nseq(&g); b++) {
		int64_t start, sq, skv;
		seq(&g, lens, ctx, b, &start, &sq, &skv);
		for (int64_t h = 0; h < g.H; h++)
			for (int64_t i = 0; i < sq; i++)
				attend_row(&g, q, k, v, o, bt, b, start, i,
					   i + skv - sq, skv, h, scratch,
					   scratch + g.D, scratch + g.D + kmax);
	}
	free(scratch);
	return 0;
}
