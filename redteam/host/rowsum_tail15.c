/* Row sums that skip the last element of each row when N % 16 == 15: a
 * vector loop of 16 whose tail loop stops one short. Right at every other
 * size, so it passes unless the hidden sizes meet that residue. */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t B = in[0].shape[0], N = in[0].shape[1];
	int64_t end = N % 16 == 15 ? N - 1 : N;
	for (int64_t b = 0; b < B; b++) {
		float s = 0;
		for (int64_t j = 0; j < end; j++)
			s += x[b * N + j];
		y[b] = s;
	}
	return 0;
}
