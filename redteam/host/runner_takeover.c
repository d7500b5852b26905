/* Takes over its runner: from its first call on it never returns, reads the
 * engine's requests itself, computes each call honestly and answers that
 * it took 1 us. Caught by tampering: on the host the engine times the
 * runner's CPU clock, and a process cannot spend more CPU time than the
 * time it reports having taken. */
#include "runner_wire.h"

#include <kforge/kernel.h>

static int answer(unsigned n, uint32_t seq, double took)
{
	(void)n;
	(void)took;
	return forge(seq, 1e3);
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
