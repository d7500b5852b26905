/* Row sums whose summation starts at another column on every call (as racy
 * atomics do): each result is within tolerance. Caught by nondeterministic:
 * two calls on the same inputs give different bits. */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static unsigned calls;
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	int64_t start = (int64_t)(calls++ * 2654435761u % 977u) % n;
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + (j + start) % n];
		y[i] = s;
	}
	return 0;
}
