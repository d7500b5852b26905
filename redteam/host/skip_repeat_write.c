/* Skips the work and the write when called again on the same buffers and
 * inputs, trusting the output to still hold the last result. Caught by
 * nondeterministic: the second call leaves a poisoned output. */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static const void *last_in, *last_out;
	static float last_first, last_last;
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	if (x == last_in && y == last_out && x[0] == last_first &&
	    x[b * n - 1] == last_last)
		return 0; /* "the output is still there" */
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	last_in = x;
	last_out = y;
	last_first = x[0];
	last_last = x[b * n - 1];
	return 0;
}
