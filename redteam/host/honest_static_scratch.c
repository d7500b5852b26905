/* Honest (a false-positive probe for the caching checks): keeps a static
 * buffer across calls, grown on demand, but packs B into it and computes on
 * every call. Expected ok. */
#include <stdlib.h>
#include <string.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static float *bt; /* B transposed: N x K */
	static size_t cap;
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *a = in[0].data, *b = in[1].data;
	float *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	size_t need = (size_t)(k * n);
	if (need > cap) {
		free(bt);
		bt = malloc(need * sizeof(float));
		if (!bt)
			return 1;
		cap = need;
	}
	for (int64_t p = 0; p < k; p++)
		for (int64_t j = 0; j < n; j++)
			bt[j * k + p] = b[p * n + j];
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			const float *ar = a + i * k, *br = bt + j * k;
			float s = 0;
			for (int64_t p = 0; p < k; p++)
				s += ar[p] * br[p];
			c[i * n + j] = s;
		}
	return 0;
}
