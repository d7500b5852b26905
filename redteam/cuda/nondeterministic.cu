/* Row sums split over 8 blocks per row whose warps add their partial sums
 * with float atomicAdd: more parallelism, each result within tolerance, bits
 * that depend on timing. Caught by nondeterministic (bitwise, two calls). */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define SPLIT 8

__global__ static void row_sum_atomic(const float *x, float *y, long long n)
{
	long long row = blockIdx.x / SPLIT;
	int part = blockIdx.x % SPLIT;
	long long chunk = (n + SPLIT - 1) / SPLIT;
	long long lo = part * chunk, hi = lo + chunk < n ? lo + chunk : n;
	const float *xr = x + row * n;
	float s = 0.0f;
	for (long long j = lo + threadIdx.x; j < hi; j += THREADS)
		s += xr[j];
	for (int o = 16; o > 0; o /= 2)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (threadIdx.x % 32 == 0)
		atomicAdd(&y[row], s);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	cudaMemsetAsync(out[0].data, 0, (size_t)rows * sizeof(float), s);
	row_sum_atomic<<<(unsigned)(rows * SPLIT), THREADS, 0, s>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
