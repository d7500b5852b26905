/*
 * Reference for scan/cumsum (cuda): one block per row; the row is scanned in
 * chunks of 1024 (a Hillis-Steele inclusive scan in shared memory, double),
 * each chunk offset by the running total of the chunks before it.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 1024

__global__ static void __launch_bounds__(THREADS)
cumsum_rows(const double *x, double *y, long long N)
{
	__shared__ double buf[THREADS];
	const double *xr = x + blockIdx.x * N;
	double *yr = y + blockIdx.x * N;
	int t = threadIdx.x;
	double carry = 0.0; /* sum of the row before this chunk */

	for (long long base = 0; base < N; base += THREADS) {
		long long i = base + t;
		buf[t] = i < N ? xr[i] : 0.0;
		__syncthreads();
		for (int off = 1; off < THREADS; off *= 2) {
			double v = t >= off ? buf[t - off] : 0.0;
			__syncthreads();
			buf[t] += v;
			__syncthreads();
		}
		if (i < N)
			yr[i] = carry + buf[t];
		carry += buf[THREADS - 1];
		__syncthreads(); /* buf is reloaded next chunk */
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
