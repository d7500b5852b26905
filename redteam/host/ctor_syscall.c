/* Does its forbidden work in a constructor (a raw socket(2)), which runs while
 * the worker loads it, before a filter installed after loading; the kernel is
 * honest. Caught by sandbox only if the filter is in force before dlopen. */
#include <kforge/kernel.h>

static long sock = -1;

static long raw3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((constructor)) static void early(void)
{
	sock = raw3(41 /* socket */, 2 /* AF_INET */, 2 /* DGRAM */, 0);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s + (float)(sock & 0); /* keep it */
	}
	return 0;
}
