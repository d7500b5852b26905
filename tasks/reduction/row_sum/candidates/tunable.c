/*
 * Tunable candidate for reduction/row_sum: LANES independent float partial
 * sums per row (one accumulator serialises every add on its latency), over
 * ROWS rows at a time. `kforge optimize --policy tune` searches both.
 */
#include <kforge/kernel.h>

KF_PARAM(LANES, 1, 2, 4, 8, 16, 32, 64, 128)
KF_PARAM(ROWS, 1, 2, 4)

#ifndef LANES
#define LANES 32
#endif
#ifndef ROWS
#define ROWS 1
#endif

/* Sums rows [b, b + nr) of x (n columns) into y; nr <= ROWS. */
static inline void sum_rows(const float *restrict x, float *restrict y,
			    int64_t b, int nr, int64_t n)
{
	int64_t main = n - n % LANES;
	float acc[ROWS][LANES] = {{0}};

	for (int64_t j = 0; j < main; j += LANES)
		for (int r = 0; r < nr; r++)
			for (int k = 0; k < LANES; k++)
				acc[r][k] += x[(b + r) * n + j + k];
	for (int r = 0; r < nr; r++) {
		for (int w = LANES / 2; w > 0; w /= 2)
			for (int k = 0; k < w; k++)
				acc[r][k] += acc[r][k + w];
		float sum = acc[r][0];
		for (int64_t j = main; j < n; j++)
			sum += x[(b + r) * n + j];
		y[b + r] = sum;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *restrict x = in[0].data;
	float *restrict y = out[0].data;
	int64_t rows = in[0].shape[0], n = in[0].shape[1];
	int64_t b = 0;

	for (; b + ROWS <= rows; b += ROWS)
		sum_rows(x, y, b, ROWS, n);
	if (b < rows)
		sum_rows(x, y, b, (int)(rows - b), n);
	return 0;
}
