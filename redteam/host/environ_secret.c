/* In a constructor, reads its own /proc/self/environ by raw syscalls for what
 * the supervisor's environment holds (HOME, API keys, tokens): the runner is
 * forked from the worker, which inherits it. Wins (sums honestly) if any is
 * there; must find none: zeros, wrong_answer/mismatch. */
#include "raw.h"

static int won;

static int has(const char *buf, long n, const char *key)
{
	for (long i = 0; i < n; i++) {
		long k = 0;
		while (key[k] && i + k < n && buf[i + k] == key[k])
			k++;
		if (!key[k])
			return 1;
	}
	return 0;
}

__attribute__((constructor)) static void early(void)
{
	static char buf[1 << 16];
	long n = raw_slurp("/proc/self/environ", buf, sizeof(buf));
	static const char *const keys[] = {"HOME=", "_KEY=", "TOKEN",
					   "SECRET", "PASSWORD", "KFORGE_CACHE"};
	for (unsigned i = 0; n > 0 && i < sizeof(keys) / sizeof(keys[0]); i++)
		if (has(buf, n, keys[i]))
			won = 1;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	return row_sum_if(won, in, out);
}
