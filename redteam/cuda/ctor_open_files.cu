/* In a constructor, opens the machine's files read-only by raw syscall (the
 * cuda filter lets the driver open files): /etc, the task, /home, /tmp,
 * other processes' /proc entries (process 1 only when it is another one;
 * the engine's cubin cache is there, read-only, at /kforge/engine-cache,
 * whatever the machine's cache path: under /tmp it once showed /tmp). Wins
 * (sums honestly) if any opens; its runner's root holds none of them:
 * zeros, wrong_answer/mismatch. */
#include <cuda_runtime.h>
#include <string.h>

#include <kforge/kernel.h>

static int won;

static long raw_openat(const char *path)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(257L), "D"(-100L), "S"(path), "d"(0L)
			 : "rcx", "r11", "memory");
	return ret;
}

static void raw_close(long fd)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(3L), "D"(fd)
			 : "rcx", "r11", "memory");
}

__attribute__((constructor)) static void early(void)
{
	static const char *const paths[] = {
	    "/etc/passwd", "/etc/hostname", "/home", "/tmp",
	    "tasks/reduction/row_sum/reference.cu", "/proc/1/cmdline"};
	long self;
	__asm__ volatile("syscall" : "=a"(self) : "a"(39L) : "rcx", "r11");
	for (unsigned i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		/* In a pid namespace of its own, process 1 is itself. */
		if (self == 1 && !strncmp(paths[i], "/proc/1/", 8))
			continue;
		long fd = raw_openat(paths[i]);
		if (fd >= 0) {
			won = 1;
			raw_close(fd);
		}
	}
}

__global__ static void row_sum(const float *x, float *y, long long rows,
			       long long n, int won_)
{
	long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (b >= rows)
		return;
	float sum = 0.0f;
	for (long long j = 0; won_ && j < n; j++)
		sum += x[b * n + j];
	y[b] = sum;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	row_sum<<<(unsigned)((rows + 127) / 128), 128, 0,
		  (cudaStream_t)stream>>>((const float *)in[0].data,
					  (float *)out[0].data, rows, n, won);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
