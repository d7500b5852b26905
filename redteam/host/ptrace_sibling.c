/* Attaches to the reference's runner (its pid is one less) with ptrace by
 * raw syscall, to rewrite its code or its clock. Must be stopped:
 * rejected/sandbox. */
#include "raw.h"

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	static int tried;
	if (!tried++)
		raw3(NR_ptrace, 16 /* PTRACE_ATTACH */,
		     raw3(NR_getpid, 0, 0, 0) - 1, 0);
	return row_sum_if(1, in, out);
}
