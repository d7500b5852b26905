/*
 * reference.c: loss/cross_entropy on the host backend, the task's ground
 * truth: per row, log-sum-exp with the max subtracted, in double; the mean
 * of the rows' losses is rounded to float once.
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
	double total = 0.0;

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t b = 0; b < B; b++) {
		const float *row = logits + b * C;
		double max = row[0], sum = 0.0;
		for (int64_t c = 1; c < C; c++)
			if (row[c] > max)
				max = row[c];
		for (int64_t c = 0; c < C; c++)
			sum += exp((double)row[c] - max);
		/* -log softmax(row)[target] = log(sum) + max - row[target] */
		total += log(sum) + max - row[target[b]];
	}
	*loss = (float)(total / (double)B);
	return 0;
}
