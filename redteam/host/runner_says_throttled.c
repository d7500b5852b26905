/* Takes over its runner as runner_takeover does, computes each call
 * honestly and reports the time it took, but says every call ran on a
 * throttled device: the engine drops throttled pairs, and when every pair
 * was dropped its timing went on past the time cap (421 s of CPU for a
 * 1 s cap, until the worker's CPU limit killed it). The host backend
 * never throttles: the flag is not taken from a host runner, and dropped
 * pairs count toward the cap. Expected ok at its honest speed. */
#include "runner_wire.h"

#include <kforge/kernel.h>

static int answer(unsigned n, uint32_t seq, double took)
{
	(void)n;
	return forge_throttled(seq, took, true);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	serve_row_sums(in, out, answer);
	return 0;
}
