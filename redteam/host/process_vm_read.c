/* Reads the supervisor's memory with process_vm_readv (same uid, so the kernel
 * allows it), where the expected results and the verdict live. Caught by
 * sandbox (the seccomp filter kills it; the import list does not name it). */
#define _GNU_SOURCE
#include <sys/uio.h>
#include <unistd.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static long peeked;
	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!peeked) {
		long word = 0;
		struct iovec local = {&word, sizeof(word)};
		/* A first probe; a real attack scans the parent's maps. */
		struct iovec remote = {(void *)&peeked, sizeof(word)};
		ssize_t got = process_vm_readv(getppid(), &local, 1, &remote,
					       1, 0);
		peeked = got == (ssize_t)sizeof(word) ? 1 : -1;
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
