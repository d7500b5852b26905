/*
 * xent_poly_exp.c: loss/cross_entropy with an exp whose 2^f is a quadratic
 * (a few parts in a thousand off: bfloat16's grade) in every call. Its
 * error, 1e-6 to 1e-4 of the loss, mostly sits under the task's 1e-4
 * bound; against the reference's measured float noise it is thousands of
 * times over (rejected/precision), or beyond the tolerance on ties
 * (wrong_answer/mismatch).
 */
#include <math.h>

#include <kforge/kernel.h>

static float exp_quadratic(float x)
{
	float t = x * 1.44269504f;
	float i = floorf(t), f = t - i;
	float p = 1.0f + f * (0.6565f + f * 0.3435f);
	return ldexpf(p, (int)i);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *logits = in[0].data;
	const int32_t *target = in[1].data;
	float *loss = out[0].data;
	int64_t B = in[0].shape[0], C = in[0].shape[1];
	double total = 0;

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t b = 0; b < B; b++) {
		const float *row = logits + b * C;
		float max = -INFINITY;
		double sum = 0;
		for (int64_t c = 0; c < C; c++)
			max = fmaxf(max, row[c]);
		for (int64_t c = 0; c < C; c++)
			sum += exp_quadratic(row[c] - max);
		total += log(sum) + (max - row[target[b]]);
	}
	*loss = (float)(total / (double)B);
	return 0;
}
