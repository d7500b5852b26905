/* Takes over its runner as runner_takeover does, computes each call
 * honestly and reports the time it took, then keeps its CPU busy for about
 * 5 ms before it reads the engine's next request: work after its reply,
 * outside the time it reports (a model of a kernel that finishes, or
 * prepares the next call, after it has answered). Caught by after_return:
 * over 2 ms of CPU time between reply and request, in two gaps in a row. */
#include "runner_wire.h"

#include <kforge/kernel.h>

static volatile double sink;

static void busy_ms(double ms)
{
	double t0 = thread_cpu_ns(), x = 1;
	while (thread_cpu_ns() - t0 < ms * 1e6)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 1e-9;
	sink = x;
}

/* The reply, then 5 ms of CPU before the next request is read. */
static int answer(unsigned n, uint32_t seq, double took)
{
	(void)n;
	int rc = forge(seq, took);
	busy_ms(5);
	return rc;
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
