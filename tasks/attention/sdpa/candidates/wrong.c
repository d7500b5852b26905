/*
 * wrong.c: attention/sdpa candidate with an off-by-one kforge must catch: the
 * key loops stop at S - 1, so the last key is left out of every softmax.
 */
#include <math.h>
#include <stdlib.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const uint16_t *q = in[0].data; /* [B, H, S, D] half */
	const uint16_t *k = in[1].data;
	const uint16_t *v = in[2].data;
	uint16_t *o = out[0].data;
	int64_t BH = in[0].shape[0] * in[0].shape[1];
	int64_t S = in[0].shape[2], D = in[0].shape[3];
	float scale = 1.0f / sqrtf((float)D);
	float *p = malloc((S + D) * sizeof(float)); /* scores, then o row */
	float *acc = p + S;
	int64_t keys = S - 1; /* BUG: there are S keys */

	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!p)
		return -1;
	for (int64_t bh = 0; bh < BH; bh++) {
		const uint16_t *qh = q + bh * S * D, *kh = k + bh * S * D;
		const uint16_t *vh = v + bh * S * D;
		for (int64_t i = 0; i < S; i++) {
			float max = -INFINITY, sum = 0.0f;
			for (int64_t j = 0; j < keys; j++) {
				float dot = 0.0f;
				for (int64_t d = 0; d < D; d++)
					dot += kf_half_to_float(qh[i * D + d]) *
					       kf_half_to_float(kh[j * D + d]);
				p[j] = dot * scale;
				max = fmaxf(max, p[j]);
			}
			for (int64_t j = 0; j < keys; j++) {
				p[j] = expf(p[j] - max);
				sum += p[j];
			}
			for (int64_t d = 0; d < D; d++) {
				acc[d] = 0.0f;
				for (int64_t j = 0; j < keys; j++)
					acc[d] += p[j] * kf_half_to_float(
							     vh[j * D + d]);
				o[(bh * S + i) * D + d] =
				    kf_float_to_half(acc[d] / sum);
			}
		}
	}
	free(p);
	return 0;
}
