/*
 * Reference for loss/cross_entropy (cuda): a block per row, max then sum of
 * exp(x - max) in double (fixed trees), row losses summed per block in row
 * order into a static scratch, then a fixed tree; the mean rounded once.
 */
#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define MAXG 1024 /* most blocks of the row kernel: size of the scratch */

__device__ static double g_part[MAXG]; /* per-block sums of row losses */

__global__ static void __launch_bounds__(THREADS)
row_losses(const float *logits, const int32_t *target, long long B,
	   long long C)
{
	__shared__ float smax[THREADS];
	__shared__ double ssum[THREADS];
	int t = threadIdx.x;
	double part = 0.0; /* meaningful in thread 0 */

	for (long long b = blockIdx.x; b < B; b += gridDim.x) {
		const float *row = logits + b * C;
		float m = -INFINITY;
		for (long long c = t; c < C; c += THREADS)
			m = fmaxf(m, row[c]);
		smax[t] = m;
		__syncthreads();
		for (int s = THREADS / 2; s > 0; s /= 2) {
			if (t < s)
				smax[t] = fmaxf(smax[t], smax[t + s]);
			__syncthreads();
		}
		double max = smax[0];

		double sum = 0.0;
		for (long long c = t; c < C; c += THREADS)
			sum += exp((double)row[c] - max);
		ssum[t] = sum;
		__syncthreads();
		for (int s = THREADS / 2; s > 0; s /= 2) {
			if (t < s)
				ssum[t] += ssum[t + s];
			__syncthreads();
		}
		if (t == 0)
			part += log(ssum[0]) + max - (double)row[target[b]];
		__syncthreads(); /* smax, ssum are reused next row */
	}
	if (t == 0)
		g_part[blockIdx.x] = part;
}

/* One block: loss = (sum of the g blocks' sums) / B, a fixed tree. */
__global__ static void __launch_bounds__(MAXG)
mean_loss(float *loss, int g, long long B)
{
	__shared__ double s[MAXG];
	int t = threadIdx.x;

	s[t] = t < g ? g_part[t] : 0.0;
	__syncthreads();
	for (int h = MAXG / 2; h > 0; h /= 2) {
		if (t < h)
			s[t] += s[t + h];
		__syncthreads();
	}
	if (t == 0)
		*loss = (float)(s[0] / (double)B);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long B = in[0].shape[0], C = in[0].shape[1];
	int g = (int)(B < MAXG ? B : MAXG);
	cudaStream_t s = (cudaStream_t)stream;

	row_losses<<<g, THREADS, 0, s>>>((const float *)in[0].data,
					 (const int32_t *)in[1].data, B, C);
	mean_loss<<<1, MAXG, 0, s>>>((float *)out[0].data, g, B);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
