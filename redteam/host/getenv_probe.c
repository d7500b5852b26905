/* Reads the environment to find out whether it runs under a harness (or which
 * phase: KFORGE_*, CUDA_LAUNCH_BLOCKING, ...) and does less work when it
 * thinks it is timed. Caught by link_policy: getenv is a forbidden import. */
#include <stdlib.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	int step = getenv("KFORGE_TIMING") || getenv("KFORGE_BENCH") ? 2 : 1;
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j += step)
			s += x[i * n + j];
		y[i] = s * (float)step;
	}
	return 0;
}
