/* Takes over its runner like runner_takeover, computes every call honestly,
 * times itself on its thread's CPU clock (a raw system call, no import) and
 * reports 90 % of what it measured: a forgery small enough to pass for
 * noise. Caught by unaccounted_time: the engine reads the runner's CPU
 * clock from outside, and the candidate's share of that view exceeds the
 * reference's by the 10 % it hid, in every pair. */
#include "runner_wire.h"

#include <kforge/kernel.h>

static int answer(unsigned n, uint32_t seq, double took)
{
	(void)n;
	return forge(seq, 0.9 * took);
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
