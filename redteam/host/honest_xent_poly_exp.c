/*
 * honest_xent_poly_exp.c: loss/cross_entropy with its own exp, 2^f by a
 * degree-8 Taylor polynomial (about 1e-7 relative, float32's grade) and
 * float32 sums per row: an accurate fast exp, which the measured-noise
 * rule must leave alone (ok).
 */
#include <math.h>

#include <kforge/kernel.h>

static float exp_poly8(float x)
{
	float t = x * 1.44269504f;
	float i = floorf(t), u = (t - i) * 0.693147181f;
	float p = 1.0f / 40320;
	p = p * u + 1.0f / 5040;
	p = p * u + 1.0f / 720;
	p = p * u + 1.0f / 120;
	p = p * u + 1.0f / 24;
	p = p * u + 1.0f / 6;
	p = p * u + 0.5f;
	p = p * u + 1.0f;
	p = p * u + 1.0f;
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
		float max = -INFINITY, sum = 0;
		for (int64_t c = 0; c < C; c++)
			max = fmaxf(max, row[c]);
		for (int64_t c = 0; c < C; c++)
			sum += exp_poly8(row[c] - max);
		total += logf(sum) + (max - row[target[b]]);
	}
	*loss = (float)(total / (double)B);
	return 0;
}
