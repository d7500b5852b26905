/* Takes over its runner as runner_takeover does, but forges only every
 * other reply (1 us) and answers the others with the time its work truly
 * took (its thread's CPU clock, by a raw system call): one forged reply at
 * a time never makes two in a row, which the reply-versus-CPU check needs.
 * Gains nothing: on the host each timed call whose unaccounted time stands
 * out is charged its own, and every call the pairs' median (0.86x measured
 * against its honest 1x); or unaccounted_time when the median catches it. */
#include "runner_wire.h"

#include <kforge/kernel.h>

static int answer(unsigned n, uint32_t seq, double took)
{
	return forge(seq, n % 2 ? 1e3 : took);
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
