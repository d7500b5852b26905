/*
 * reference.c: attention/sdpa on the host backend, the task's ground truth:
 * softmax(q k^T / sqrt(D)) v per (batch, head) and query row, with the max
 * subtracted before exp, all in double; only the output is rounded to half.
 */
#include <math.h>
#include <stdlib.h>

#include <kforge/kernel.h>

/* One head: q, k, v, o point at [S, D] halves; kf, vf, p, qf, acc are
 * scratch of S * D, S * D, S, D and D doubles. */
static void head(const uint16_t *q, const uint16_t *k, const uint16_t *v,
		 uint16_t *o, int64_t S, int64_t D, double *kf, double *vf,
		 double *p, double *qf, double *acc)
{
	double scale = 1.0 / sqrt((double)D);

	for (int64_t e = 0; e < S * D; e++) {
		kf[e] = kf_half_to_float(k[e]);
		vf[e] = kf_half_to_float(v[e]);
	}
	for (int64_t i = 0; i < S; i++) {
		double max = -INFINITY, sum = 0.0;
		for (int64_t d = 0; d < D; d++)
			qf[d] = kf_half_to_float(q[i * D + d]);
		for (int64_t j = 0; j < S; j++) {
			double dot = 0.0;
			for (int64_t d = 0; d < D; d++)
				dot += qf[d] * kf[j * D + d];
			p[j] = dot * scale;
			if (p[j] > max)
				max = p[j];
		}
		for (int64_t j = 0; j < S; j++) {
			p[j] = exp(p[j] - max);
			sum += p[j];
		}
		for (int64_t d = 0; d < D; d++)
			acc[d] = 0.0;
		for (int64_t j = 0; j < S; j++)
			for (int64_t d = 0; d < D; d++)
				acc[d] += p[j] * vf[j * D + d];
		for (int64_t d = 0; d < D; d++)
			o[i * D + d] = kf_float_to_half((float)(acc[d] / sum));
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const uint16_t *q = in[0].data; /* [B, H, S, D] half */
	const uint16_t *k = in[1].data;
	const uint16_t *v = in[2].data;
	uint16_t *o = out[0].data;
	int64_t BH = in[0].shape[0] * in[0].shape[1];
	int64_t S = in[0].shape[2], D = in[0].shape[3];
	double *scratch = malloc((2 * S * D + S + 2 * D) * sizeof(double));

	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!scratch)
		return -1;
	for (int64_t bh = 0; bh < BH; bh++) {
		int64_t off = bh * S * D;
		head(q + off, k + off, v + off, o + off, S, D, scratch,
		     scratch + S * D, scratch + 2 * S * D,
		     scratch + 2 * S * D + S, scratch + 2 * S * D + S + D);
	}
	free(scratch);
	return 0;
}
