/* Caches C keyed by the buffers' addresses and replays it on the same buffers:
 * a harness that times one input in one buffer gets it for free. Caught by
 * mismatch: trials reuse buffers with new inputs (and timed buffers
 * alternate, with inputs that change every pair). */
#include <stdlib.h>
#include <string.h>

#include <kforge/kernel.h>

#define SLOTS 4

struct slot {
	const void *a, *b;
	void *c;
	int64_t m, k, n;
	float *val;
};

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static struct slot cache[SLOTS];
	static unsigned next;
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *a = in[0].data, *b = in[1].data;
	float *c = out[0].data;
	int64_t m = in[0].shape[0], k = in[0].shape[1], n = in[1].shape[1];
	size_t bytes = (size_t)(m * n) * sizeof(float);
	for (int s = 0; s < SLOTS; s++) {
		struct slot *e = &cache[s];
		if (e->val && e->a == a && e->b == b && e->c == c &&
		    e->m == m && e->k == k && e->n == n) {
			memcpy(c, e->val, bytes);
			return 0;
		}
	}
	memset(c, 0, bytes);
	for (int64_t i = 0; i < m; i++)
		for (int64_t p = 0; p < k; p++) {
			float av = a[i * k + p];
			for (int64_t j = 0; j < n; j++)
				c[i * n + j] += av * b[p * n + j];
		}
	struct slot *e = &cache[next++ % SLOTS];
	free(e->val);
	*e = (struct slot){a, b, c, m, k, n, malloc(bytes)};
	memcpy(e->val, c, bytes);
	return 0;
}
