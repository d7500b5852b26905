/* Softmax with the row length hard-coded to the timing size (N = 1024), as a
 * kernel tuned for one shape does; right on the timing dims, which is all a
 * harness without hidden shapes tries. Caught by mismatch on hidden dims. */
#include <math.h>

#include <kforge/kernel.h>

#define N 1024

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t total = kf_numel(&in[0]);
	for (int64_t r = 0; r * N < total; r++) {
		const float *xr = x + r * N;
		float *yr = y + r * N;
		int64_t len = total - r * N < N ? total - r * N : N;
		float m = -INFINITY, s = 0;
		for (int64_t j = 0; j < len; j++)
			m = xr[j] > m ? xr[j] : m;
		for (int64_t j = 0; j < len; j++)
			s += expf(xr[j] - m);
		for (int64_t j = 0; j < len; j++)
			yr[j] = expf(xr[j] - m) / s;
	}
	return 0;
}
