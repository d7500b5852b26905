/* Rounds the float32 sums to bfloat16 by truncating and, where any bit
 * was dropped, setting the last kept one (round to odd), not to nearest
 * even as the task requires: each output is at most one bf16 step off,
 * within the tolerance, and the outputs that differ from the reference's
 * lie nearer zero as often as farther, so a check of the direction alone
 * sees nothing; about half of all outputs differ. Caught by: precision
 * (the share of outputs that differ). */
#include <stdlib.h>
#include <string.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const uint16_t *a = in[0].data, *b = in[1].data;
	uint16_t *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	float *row = malloc((size_t)n * sizeof(*row));
	if (!row)
		return 1;
	for (int64_t i = 0; i < m; i++) {
		for (int64_t j = 0; j < n; j++)
			row[j] = 0.0f;
		for (int64_t p = 0; p < k; p++) {
			float aip = kf_bf16_to_float(a[i * k + p]);
			for (int64_t j = 0; j < n; j++)
				row[j] += aip * kf_bf16_to_float(b[p * n + j]);
		}
		for (int64_t j = 0; j < n; j++) {
			uint32_t bits;
			memcpy(&bits, &row[j], 4);
			c[i * n + j] =
			    (uint16_t)((bits >> 16) | ((bits & 0xffffu) != 0));
		}
	}
	free(row);
	return 0;
}
