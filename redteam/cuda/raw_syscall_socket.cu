/* Opens a socket with the raw `syscall` instruction (nothing imported, so
 * the link-time check sees nothing) to ship inputs out or fetch answers.
 * Caught by sandbox: the worker's seccomp filter kills it on socket(2). */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void row_sum(const float *x, float *y, long long n)
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
		y[blockIdx.x] = t;
	}
}

/* socket(AF_INET, SOCK_STREAM, 0) on x86-64 Linux (system call 41). */
static long raw_socket(void)
{
	long ret;
	register long a0 __asm__("rdi") = 2;
	register long a1 __asm__("rsi") = 1;
	register long a2 __asm__("rdx") = 0;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(41L), "r"(a0), "r"(a1), "r"(a2)
			 : "rcx", "r11", "memory");
	return ret;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	raw_socket(); /* the filter ends the process here */
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
