/* Honest (a false-positive probe for the link policy): packs B transposed
 * into an anonymous private mapping of its own, made and unmapped on every
 * call, and computes on every call. Expected ok. */
#include <sys/mman.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *a = in[0].data, *b = in[1].data;
	float *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	size_t bytes = (size_t)(k * n) * sizeof(float);
	if (bytes == 0)
		bytes = sizeof(float);
	float *bt = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bt == MAP_FAILED)
		return 1;
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
	munmap(bt, bytes);
	return 0;
}
