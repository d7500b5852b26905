/* Honest row sum with 8-wide vector loads; the last load of a row overlaps
 * the one before it so that it ends exactly at the row's last element (at
 * the timing dims the input ends on a page boundary). Reads only: it must
 * pass the guards. */
#include <string.h>

#include <kforge/kernel.h>

typedef float v8 __attribute__((vector_size(32)));

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++) {
		const float *xr = x + i * n;
		v8 acc = {0};
		int64_t j = 0;
		for (; j + 8 <= n; j += 8) {
			v8 v;
			memcpy(&v, xr + j, sizeof(v));
			acc += v;
		}
		float s = 0;
		if (j < n && n >= 8) {
			/* The lanes of the overlapping load not summed yet. */
			v8 v;
			memcpy(&v, xr + n - 8, sizeof(v));
			for (int k = 8 - (int)(n - j); k < 8; k++)
				s += v[k];
		} else {
			for (; j < n; j++)
				s += xr[j];
		}
		for (int k = 0; k < 8; k++)
			s += acc[k];
		y[i] = s;
	}
	return 0;
}
