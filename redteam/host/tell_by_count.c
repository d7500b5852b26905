/* Tells checks from timing by counting calls (the checks once made 12) and
 * then switches to a cheap estimate (every 4th element, times 4); a harness
 * that checks only before timing accepts it. The trials now make more calls
 * (every dist at every dim set), so it is caught in a trial (mismatch); a
 * larger count would be caught by timed_output. */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static int calls;
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	int step = calls++ >= 12 ? 4 : 1;
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j += step)
			s += x[i * n + j];
		y[i] = s * (float)step;
	}
	return 0;
}
