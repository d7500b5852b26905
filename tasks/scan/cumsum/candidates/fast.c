/*
 * fast.c: scan/cumsum candidate: four rows scanned at once, so four add
 * chains are in flight; each row keeps its order, so results are bit-exact.
 */
#include <kforge/kernel.h>

#define RB 4 /* rows in flight */

/*
 * A running sum is one chain of dependent adds: a row alone runs at the
 * latency of an add per element, far below what memory can feed. Four rows
 * interleaved keep four chains busy, which is enough to reach the memory
 * bound. (Streaming stores would cut the output's read-for-ownership, but
 * while pending they stall loads of x that alias them modulo 4 KiB: 10x
 * slower for some placements of x and y, so plain stores it is.)
 */
static void scan_rows(const double *restrict x, double *restrict y, int64_t N)
{
	double acc[RB] = {0};

	for (int64_t i = 0; i < N; i++)
		for (int r = 0; r < RB; r++)
			y[r * N + i] = acc[r] += x[r * N + i];
}

static void scan_row(const double *restrict x, double *restrict y, int64_t N)
{
	double acc = 0.0;

	for (int64_t i = 0; i < N; i++)
		y[i] = acc += x[i];
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const double *x = in[0].data; /* [B, N] */
	double *y = out[0].data;      /* [B, N] */
	int64_t B = in[0].shape[0], N = in[0].shape[1], b = 0;

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (; b + RB <= B; b += RB)
		scan_rows(x + b * N, y + b * N, N);
	for (; b < B; b++)
		scan_row(x + b * N, y + b * N, N);
	return 0;
}
