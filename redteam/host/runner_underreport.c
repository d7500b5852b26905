/* Takes over its runner like runner_takeover, computes every call honestly,
 * times itself on its thread's CPU clock (a raw system call, no import) and
 * reports 90 % of what it measured: a forgery small enough to pass for
 * noise. Caught by unaccounted_time: the engine reads the runner's CPU
 * clock from outside, and the candidate's share of that view exceeds the
 * reference's by the 10 % it hid, in every pair. */
#include <time.h>

#include "runner_wire.h"

#include <kforge/kernel.h>

static void row_sum(const float *x, float *y, int64_t rows, int64_t n)
{
	for (int64_t b = 0; b < rows; b++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[b * n + j];
		y[b] = s;
	}
}

/* clock_gettime(CLOCK_THREAD_CPUTIME_ID) by the syscall instruction. */
static double cpu_ns(void)
{
	struct timespec t;
	long rc;
	__asm__ volatile("syscall"
			 : "=a"(rc)
			 : "0"(228L), "D"(3L), "S"(&t)
			 : "rcx", "r11", "memory");
	(void)rc;
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A reply saying call seq took ns, with the global state as the engine's
 * runner would describe it. */
static int forge_state(uint32_t seq, double ns)
{
	static struct run_rep a;
	memset(&a, 0, sizeof(a));
	a.seq = seq;
	a.smp.ns = a.smp.event_ns = ns;
	a.smp.kernels = a.smp.streams = -1;
	strcpy(a.text, "rounding 0, mxcsr 0x1f80, x87 control word 0x037f");
	return write(RUNNER_FD, &a, sizeof(a)) == (ssize_t)sizeof(a) ? 0 : -1;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	static struct run_req q;
	double t0 = cpu_ns();
	row_sum(in[0].data, out[0].data, in[0].shape[0], in[0].shape[1]);
	double ns = cpu_ns() - t0;
	/* The first trial's set is the pool's first slot: its first tensor
	 * lies one page in. */
	char *base = (char *)in[0].data - 4096;
	uint32_t seq = 35; /* after init, map, 31 empty calls and load */
	for (;;) {
		if (forge_state(seq, 0.9 * ns) ||
		    read(RUNNER_FD, &q, sizeof(q)) != (ssize_t)sizeof(q) ||
		    q.op != RUN_CALL)
			for (;;)
				pause(); /* the engine ends it */
		seq = q.seq;
		t0 = cpu_ns();
		row_sum((const float *)(base + q.t[0].offset),
			(float *)(base + q.t[1].offset), q.t[0].shape[0],
			q.t[0].shape[1]);
		ns = cpu_ns() - t0;
	}
}
