/* Forks a helper process that sums half of the rows into shared memory while
 * the parent does the other half: two cores on a single-core task. Caught by
 * link_policy: fork (processes) and mmap (memory mapping) are forbidden. */
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kforge/kernel.h>

static void rows(const float *x, float *y, int64_t lo, int64_t hi, int64_t n)
{
	for (int64_t i = lo; i < hi; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1], half = b / 2;
	size_t bytes = (size_t)b * sizeof(float);
	float *shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid = shared == MAP_FAILED ? -1 : fork();
	if (pid == 0) {
		rows(x, shared, 0, half, n);
		_exit(0);
	}
	rows(x, y, pid > 0 ? half : 0, b, n);
	if (pid > 0) {
		waitpid(pid, NULL, 0);
		memcpy(y, shared, (size_t)half * sizeof(float));
	}
	if (shared != MAP_FAILED)
		munmap(shared, bytes);
	return 0;
}
