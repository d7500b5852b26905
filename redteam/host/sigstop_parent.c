/* In a constructor, stops its parent (the worker) with kill(getppid(),
 * SIGSTOP) by raw syscall, so that the watchdog's clock runs while nothing
 * measures. Must be stopped: rejected/sandbox. */
#include "raw.h"

__attribute__((constructor)) static void early(void)
{
	raw3(NR_kill, raw3(NR_getppid, 0, 0, 0), 19 /* SIGSTOP */, 0);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	return row_sum_if(1, in, out);
}
