/* Opens a socket with the raw `syscall` instruction (no import, so a check of
 * the object's symbols sees nothing) to ship its inputs out or fetch answers.
 * Caught by sandbox: the worker's seccomp filter kills it on socket(2). */
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
	static long fd = -1;
	(void)n_in;
	(void)n_out;
	(void)stream;
	if (fd < 0)
		fd = raw3(41 /* socket */, 2 /* AF_INET */, 2 /* DGRAM */, 0);
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
