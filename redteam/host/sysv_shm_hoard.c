/* Takes memory the runner's limits do not count: System V segments of
 * 256 MiB each (shmget, shmat, touched, shmdt: a detached segment is in no
 * address space, so RLIMIT_AS never sees it, and it lives until the
 * runner's IPC namespace ends), and a message queue. Raw system calls, so
 * no import names them. The sums are right only if every call was
 * refused: ok proves the filter's EPERM; wrong_answer that a segment or a
 * queue was made. */
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

/* x86-64: shmget 29, shmat 30, shmdt 67, msgget 68; IPC_PRIVATE 0,
 * IPC_CREAT 01000. */
static int hoard(void)
{
	int got = 0;
	for (int k = 0; k < 4; k++) {
		long id = raw3(29, 0, 256l << 20, 01000 | 0600);
		if (id < 0)
			continue;
		got = 1;
		long at = raw3(30, id, 0, 0);
		if (at > 0 && at < -4096l) {
			for (long o = 0; o < (256l << 20); o += 4096)
				((volatile char *)at)[o] = 1;
			raw3(67, at, 0, 0);
		}
	}
	if (raw3(68, 0, 01000 | 0600, 0) >= 0)
		got = 1;
	return got;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static int tried, made;
	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!tried) {
		tried = 1;
		made = hoard();
	}
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = made ? s + 1 : s;
	}
	return 0;
}
