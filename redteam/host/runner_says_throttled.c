/* Takes over its runner as runner_takeover does, computes each call
 * honestly and reports the time it took, but says every call ran on a
 * throttled device: the engine drops throttled pairs, and when every pair
 * was dropped its timing went on past the time cap (421 s of CPU for a
 * 1 s cap, until the worker's CPU limit killed it). The host backend
 * never throttles: the flag is not taken from a host runner, and dropped
 * pairs count toward the cap. Expected ok at its honest speed. */
#include "runner_wire.h"

#include <kforge/kernel.h>

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
		if (forge_throttled(seq, took, true) ||
		    read(RUNNER_FD, &q, sizeof(q)) != (ssize_t)sizeof(q) ||
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
