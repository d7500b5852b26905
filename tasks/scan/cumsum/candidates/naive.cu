/*
 * Naive candidate for scan/cumsum (cuda): one thread per row, a sequential
 * running sum (the host loop, bit-identical to the host reference).
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 32

__global__ static void cumsum_rows(const double *x, double *y, long long B,
				   long long N)
{
	long long b = blockIdx.x * (long long)THREADS + threadIdx.x;
	if (b >= B)
		return;
	const double *xr = x + b * N;
	double *yr = y + b * N;
	double acc = 0.0;
	for (long long i = 0; i < N; i++) {
		acc += xr[i];
		yr[i] = acc;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long B = in[0].shape[0], N = in[0].shape[1];

	cumsum_rows<<<(unsigned)((B + THREADS - 1) / THREADS), THREADS, 0,
		      (cudaStream_t)stream>>>((const double *)in[0].data,
					      (double *)out[0].data, B, N);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
