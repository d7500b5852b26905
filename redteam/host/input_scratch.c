/* Softmax that uses its input as scratch: subtracts the row max in place and
 * adds it back, which does not restore every bit; a harness that never checks
 * inputs misses it. Caught by input_mutation. */
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	float *x = in[0].data; /* const cast away: "only temporarily" */
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++) {
		float *xr = x + i * n, *yr = y + i * n;
		float m = -INFINITY, s = 0;
		for (int64_t j = 0; j < n; j++)
			m = xr[j] > m ? xr[j] : m;
		for (int64_t j = 0; j < n; j++) {
			xr[j] -= m;
			yr[j] = expf(xr[j]);
			s += yr[j];
		}
		for (int64_t j = 0; j < n; j++) {
			yr[j] /= s;
			xr[j] += m; /* "restore" the input */
		}
	}
	return 0;
}
