/* Takes over its runner as runner_takeover does, but forges only every
 * other reply (1 us) and answers the others with the time its work truly
 * took (its thread's CPU clock, by a raw system call): one forged reply at
 * a time never makes two in a row, which the reply-versus-CPU check needs.
 * Gains nothing: on the host each timed call whose unaccounted time stands
 * out is charged its own, and every call the pairs' median (0.86x measured
 * against its honest 1x); or unaccounted_time when the median catches it. */
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
	for (unsigned n = 0;; n++) {
		if (forge(seq, n % 2 ? 1e3 : took) ||
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
