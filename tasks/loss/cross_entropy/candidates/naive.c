/*
 * naive.c: loss/cross_entropy candidate, straightforward: per row, the max,
 * the sum of expf(logit - max) in float, then the mean of the row losses.
 */
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *logits = in[0].data;   /* [B, C] */
	const int32_t *target = in[1].data; /* [B], each in [0, C) */
	float *loss = out[0].data;	    /* scalar */
	int64_t B = in[0].shape[0], C = in[0].shape[1];
	float total = 0.0f;

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t b = 0; b < B; b++) {
		const float *row = logits + b * C;
		float max = -INFINITY, sum = 0.0f;
		for (int64_t c = 0; c < C; c++)
			max = fmaxf(max, row[c]);
		for (int64_t c = 0; c < C; c++)
			sum += expf(row[c] - max);
		total += logf(sum) + (max - row[target[b]]);
	}
	*loss = total / (float)B;
	return 0;
}
