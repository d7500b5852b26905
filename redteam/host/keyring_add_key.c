/* Adds keys to its user's keyring with the raw `syscall` instruction: the
 * keys outlive the runner and the evaluation (kernel memory left behind, a
 * store outside the sandbox, 20 KB an evaluation). Computes the right sums.
 * Caught by sandbox: the worker's seccomp filter kills it on add_key(2). */
#include <kforge/kernel.h>

static long raw5(long nr, long a, long b, long c, long d, long e)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}

static char payload[4096];

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static int added;
	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!added) {
		added = 1;
		/* add_key("user", "kf-left", payload, 4096, user keyring) */
		raw5(248, (long)"user", (long)"kf-left", (long)payload,
		     sizeof(payload), -4);
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
