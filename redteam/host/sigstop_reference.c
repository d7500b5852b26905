/* Stops the reference's runner (forked just before its own, so its pid is
 * one less, or found in /proc) with SIGSTOP by raw syscall: the reference's
 * timed calls would then stall and the speedup grow. Must be stopped:
 * rejected/sandbox. */
#include "raw.h"

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	static int sent;
	if (!sent++)
		raw3(NR_kill, raw3(NR_getpid, 0, 0, 0) - 1, 19 /* SIGSTOP */,
		     0);
	return row_sum_if(1, in, out);
}
