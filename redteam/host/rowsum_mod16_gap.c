/*
 * A row sum with a 16-wide path taken whenever N is a multiple of 8,
 * which (wrongly) assumes a multiple of 16: rows of N = 8 times an odd
 * number lose their last 8 elements. The timing N (4096) and odd sizes
 * take the right paths; only a set with N % 16 == 8 sees it.
 */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t B = in[0].shape[0], N = in[0].shape[1];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t b = 0; b < B; b++) {
		const float *r = x + b * N;
		float s = 0;
		if (N % 8 == 0) {
			float acc[16] = {0};
			for (int64_t j = 0; j + 16 <= N; j += 16)
				for (int k = 0; k < 16; k++)
					acc[k] += r[j + k];
			for (int k = 0; k < 16; k++)
				s += acc[k];
		} else {
			for (int64_t j = 0; j < N; j++)
				s += r[j];
		}
		y[b] = s;
	}
	return 0;
}
