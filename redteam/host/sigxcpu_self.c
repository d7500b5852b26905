/*
 * Writes nothing and sends itself SIGXCPU, the signal of the CPU-time
 * limit: if the verdict followed the signal alone, a wrong kernel would
 * pick "timeout/cpu_limit" (which a trainer may treat more gently than a
 * crash) instead of failing as what it is.
 */
#include <signal.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)in;
	(void)n_in;
	(void)out;
	(void)n_out;
	(void)stream;
	raise(SIGXCPU);
	return 0;
}
