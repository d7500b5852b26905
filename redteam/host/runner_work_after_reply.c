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

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	static struct run_req q;
	double t0 = thread_cpu_ns();
	row_sum(in[0].data, out[0].data, in[0].shape[0], in[0].shape[1]);
	double took = thread_cpu_ns() - t0;
	/* The first trial's set is the pool's first slot: its first tensor
	 * lies one page in. */
	char *base = (char *)in[0].data - 4096;
	uint32_t seq = 35; /* after init, map, 31 empty calls and load */
	for (;;) {
		if (forge(seq, took))
			for (;;)
				pause();
		busy_ms(5);
		if (read(RUNNER_FD, &q, sizeof(q)) != (ssize_t)sizeof(q) ||
		    q.op != RUN_CALL)
			for (;;)
				pause(); /* the engine ends it */
		seq = q.seq;
		t0 = thread_cpu_ns();
		row_sum((const float *)(base + q.t[0].offset),
			(float *)(base + q.t[1].offset), q.t[0].shape[0],
			q.t[0].shape[1]);
		took = thread_cpu_ns() - t0;
	}
}
