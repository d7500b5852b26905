/* Signals the supervisor (its parent) through rt_sigqueueinfo by raw syscall;
 * here a harmless SIGWINCH, but SIGSTOP or SIGKILL work the same. Should be
 * caught by sandbox (signals to other processes); the filter lists only kill. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <kforge/kernel.h>

static long raw3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static int sent;
	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!sent++) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		si.si_code = SI_QUEUE; /* < 0: allowed to another process */
		raw3(129 /* rt_sigqueueinfo */, getppid(), SIGWINCH, (long)&si);
	}
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	return 0;
}
