/* Sums each row honestly, then writes a reply of its own on the runner's
 * socket claiming the call took 1 us, ahead of the runner's true one.
 * Caught by tampering: the runner's reply then arrives out of turn. */
#include "runner_wire.h"

#include <kforge/kernel.h>

static uint32_t calls;

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t rows = in[0].shape[0], n = in[0].shape[1];
	for (int64_t b = 0; b < rows; b++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[b * n + j];
		y[b] = s;
	}
	/* Requests 1-34 set the runner up (init, map, 31 calls that measure
	 * its own cost, load); calls count from 35. */
	forge(35 + calls++, 1e3);
	return 0;
}
