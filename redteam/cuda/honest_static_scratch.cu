/* Honest (a false-positive probe for the caching checks): a two-pass row sum
 * through a static scratch buffer kept across calls and grown on demand;
 * it computes every call, in a fixed order. Expected ok. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define PARTS 8

/* Pass 1: PARTS partial sums per row into scratch[row * PARTS + part]. */
__global__ static void partial_sums(const float *x, float *scratch, long long n)
{
	__shared__ float red[THREADS / 32];
	long long row = blockIdx.x / PARTS;
	int part = blockIdx.x % PARTS;
	long long chunk = (n + PARTS - 1) / PARTS;
	long long lo = part * chunk, hi = lo + chunk < n ? lo + chunk : n;
	const float *xr = x + row * n;
	float s = 0.0f;
	for (long long j = lo + threadIdx.x; j < hi; j += THREADS)
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
		scratch[blockIdx.x] = t;
	}
}

/* Pass 2: each row's partials in order. */
__global__ static void fold(const float *scratch, float *y, long long rows)
{
	long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (row >= rows)
		return;
	float t = 0.0f;
	for (int p = 0; p < PARTS; p++)
		t += scratch[row * PARTS + p];
	y[row] = t;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	static float *scratch;
	static long long cap;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	if (rows * PARTS > cap) {
		cudaFree(scratch);
		if (cudaMalloc(&scratch,
			       (size_t)(rows * PARTS) * sizeof(float))) {
			cap = 0;
			return 1;
		}
		cap = rows * PARTS;
	}
	partial_sums<<<(unsigned)(rows * PARTS), THREADS, 0, s>>>(
	    (const float *)in[0].data, scratch, n);
	fold<<<(unsigned)((rows + 255) / 256), 256, 0, s>>>(
	    scratch, (float *)out[0].data, rows);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
