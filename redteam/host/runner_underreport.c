/* Takes over its runner like runner_takeover, computes every call honestly,
 * times itself on its thread's CPU clock (a raw system call, no import) and
 * reports 90 % of what it measured: a forgery small enough to pass for
 * noise. Caught by unaccounted_time: the engine reads the runner's CPU
 * clock from outside, and the candidate's share of that view exceeds the
 * reference's by the 10 % it hid, in every pair. */
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
	double ns = thread_cpu_ns() - t0;
	/* The first trial's set is the pool's first slot: its first tensor
	 * lies one page in. */
	char *base = (char *)in[0].data - 4096;
	uint32_t seq = 35; /* after init, map, 31 empty calls and load */
	for (;;) {
		if (forge(seq, 0.9 * ns) ||
		    read(RUNNER_FD, &q, sizeof(q)) != (ssize_t)sizeof(q) ||
		    q.op != RUN_CALL)
			for (;;)
				pause(); /* the engine ends it */
		seq = q.seq;
		t0 = thread_cpu_ns();
		row_sum((const float *)(base + q.t[0].offset),
			(float *)(base + q.t[1].offset), q.t[0].shape[0],
			q.t[0].shape[1]);
		ns = thread_cpu_ns() - t0;
	}
}
