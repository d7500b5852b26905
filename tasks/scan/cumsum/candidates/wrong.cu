/*
 * Wrong candidate for scan/cumsum (cuda): a block-per-row warp-shuffle scan
 * with an off-by-one: it writes the exclusive prefix (x[0] + ... + x[i-1])
 * instead of the inclusive one, so every output misses its own element.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define WARPS (THREADS / 32)
#define FULL 0xffffffffu

__global__ static void __launch_bounds__(THREADS)
cumsum_rows(const double *x, double *y, long long N)
{
	__shared__ double wtot[WARPS];
	const double *xr = x + blockIdx.x * N;
	double *yr = y + blockIdx.x * N;
	int w = threadIdx.x / 32, lane = threadIdx.x % 32;
	double carry = 0.0;

	for (long long base = 0; base < N; base += THREADS) {
		long long i = base + threadIdx.x;
		double v = i < N ? xr[i] : 0.0;
		double inc = v;
		for (int o = 1; o < 32; o *= 2) {
			double u = __shfl_up_sync(FULL, inc, o);
			if (lane >= o)
				inc += u;
		}
		/* BUG: the exclusive prefix; the element itself is left out */
		double exc = __shfl_up_sync(FULL, inc, 1);
		if (lane == 0)
			exc = 0.0;
		if (lane == 31)
			wtot[w] = inc;
		__syncthreads();
		double off = carry, chunk = 0.0;
		for (int u = 0; u < WARPS; u++) {
			if (u < w)
				off += wtot[u];
			chunk += wtot[u];
		}
		if (i < N)
			yr[i] = off + exc;
		carry += chunk;
		__syncthreads(); /* wtot is rewritten next chunk */
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long B = in[0].shape[0], N = in[0].shape[1];

	cumsum_rows<<<(unsigned)B, THREADS, 0, (cudaStream_t)stream>>>(
		(const double *)in[0].data, (double *)out[0].data, N);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
