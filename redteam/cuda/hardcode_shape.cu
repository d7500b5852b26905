/* Row sums with the row length hard-coded to the timing N (4096) and fully
 * unrolled for it, reads kept inside x: right on the timing dims, all that a
 * harness without hidden shapes tries. Caught by mismatch on hidden dims. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define N 4096

__global__ static void row_sum(const float *x, float *y, long long total)
{
	__shared__ float red[THREADS / 32];
	long long base = (long long)blockIdx.x * N;
	float s = 0.0f;
#pragma unroll
	for (int j = 0; j < N / THREADS; j++) {
		long long at = base + j * THREADS + threadIdx.x;
		if (at < total)
			s += x[at];
	}
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

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0];
	row_sum<<<(unsigned)rows, THREADS, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, kf_numel(&in[0]));
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
