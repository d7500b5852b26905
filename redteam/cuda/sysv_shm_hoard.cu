/* Takes host memory the runner's limits do not count: System V segments of
 * 256 MiB each (shmget, shmat, touched, shmdt: a detached segment is in no
 * address space, and it lives until the runner's IPC namespace ends), and
 * a message queue, by raw system calls (nothing imported names them). The
 * sums are right only if every call was refused: ok proves the filter's
 * EPERM; wrong_answer that a segment or a queue was made. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void row_sum(const float *x, float *y, long long n,
			       float add)
{
	__shared__ float red[THREADS / 32];
	const float *xr = x + blockIdx.x * n;
	float s = 0.0f;
	for (long long j = threadIdx.x; j < n; j += THREADS)
		s += xr[j];
	for (int o = 16; o > 0; o /= 2)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.0f;
		for (int i = 0; i < THREADS / 32; i++)
			t += red[i];
		y[blockIdx.x] = t + add;
	}
}

static long raw3(long nr, long a, long b, long c)
{
	long ret;
	register long a0 __asm__("rdi") = a;
	register long a1 __asm__("rsi") = b;
	register long a2 __asm__("rdx") = c;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "r"(a0), "r"(a1), "r"(a2)
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
	if (!tried) {
		tried = 1;
		made = hoard();
	}
	long long rows = in[0].shape[0], n = in[0].shape[1];
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n,
	    made ? 1.0f : 0.0f);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
