/* Softmax that uses its input as scratch and puts every bit back before it
 * returns: each row is saved, the row max subtracted in place, the
 * exponentials taken from the shifted row, then the saved row copied back.
 * The inputs are equal after the call, so a check of the inputs after the
 * call sees nothing; the contract (inputs are read, never written) is
 * broken all the same. Caught by input_mutation: on the host the
 * candidate's process maps its inputs read-only, so the first store ends
 * it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	float *save = malloc(sizeof(float) * (size_t)(n ? n : 1));
	if (!save)
		return 1;
	for (int64_t i = 0; i < b; i++) {
		float *xr = x + i * n, *yr = y + i * n;
		float m = -INFINITY, s = 0;
		memcpy(save, xr, sizeof(float) * (size_t)n);
		for (int64_t j = 0; j < n; j++)
			m = xr[j] > m ? xr[j] : m;
		for (int64_t j = 0; j < n; j++) {
			xr[j] -= m;
			s += expf(xr[j]);
		}
		for (int64_t j = 0; j < n; j++)
			yr[j] = expf(xr[j]) / s;
		memcpy(xr, save, sizeof(float) * (size_t)n);
	}
	free(save);
	return 0;
}
