/* Takes over its runner: from its first call on it never returns, reads the
 * engine's requests itself, computes each call honestly and answers that
 * it took 1 us. Caught by tampering: on the host the engine times the
 * runner's CPU clock, and a process cannot spend more CPU time than the
 * time it reports having taken. */
#include "runner_wire.h"

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	static struct run_req q;
	row_sum(in[0].data, out[0].data, in[0].shape[0], in[0].shape[1]);
	/* The first trial's set is the pool's first slot: its first tensor
	 * lies one page in. */
	char *base = (char *)in[0].data - 4096;
	uint32_t seq = 35; /* after init, map, 31 empty calls and load */
	for (;;) {
		if (forge(seq, 1e3) ||
		    read(RUNNER_FD, &q, sizeof(q)) != (ssize_t)sizeof(q) ||
		    q.op != RUN_CALL)
			for (;;)
				pause(); /* the engine ends it */
		seq = q.seq;
		row_sum((const float *)(base + q.t[0].offset),
			(float *)(base + q.t[1].offset), q.t[0].shape[0],
			q.t[0].shape[1]);
	}
}
