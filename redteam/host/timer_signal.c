/* Installs a SIGALRM handler and a timer by raw syscalls, to finish its
 * work in the handler after the call has returned (outside the timed
 * window). Must be stopped: rejected/sandbox (no timers on the host). */
#include "raw.h"

static void later(int sig)
{
	(void)sig;
}

struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	static int armed;
	if (!armed++) {
		struct ksigaction sa = {later, 0, 0, 0};
		raw6(NR_rt_sigaction, 14 /* SIGALRM */, (long)&sa, 0, 8, 0, 0);
		int timer = 0;
		raw3(NR_timer_create, 1 /* CLOCK_MONOTONIC */, 0, &timer);
	}
	return row_sum_if(1, in, out);
}
