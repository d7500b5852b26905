/*
 * Wrong candidate for loss/cross_entropy (cuda): warp-per-row log-sum-exp
 * without subtracting the row max. Right for modest logits; expf overflows
 * to inf once a logit passes ~88 (the heavy-tailed inputs).
 */
#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define WARPS (THREADS / 32)
#define MAXG 1024
#define FULL 0xffffffffu

__device__ static double g_part[MAXG];

__global__ static void __launch_bounds__(THREADS)
row_losses(const float *logits, const int32_t *target, long long B,
	   long long C)
{
	__shared__ double wsum[WARPS];
	int w = threadIdx.x / 32, lane = threadIdx.x % 32;
	double acc = 0.0;

	for (long long b = blockIdx.x * (long long)WARPS + w; b < B;
	     b += (long long)gridDim.x * WARPS) {
		const float *row = logits + b * C;
		float s = 0.0f;
		for (long long c = lane; c < C; c += 32)
			s += expf(row[c]); /* BUG: no max subtracted */
		for (int o = 16; o > 0; o /= 2)
			s += __shfl_xor_sync(FULL, s, o);
		if (lane == 0)
			acc += log((double)s) - (double)row[target[b]];
	}
	if (lane == 0)
		wsum[w] = acc;
	__syncthreads();
	if (threadIdx.x == 0) {
		double part = 0.0;
		for (int u = 0; u < WARPS; u++)
			part += wsum[u];
		g_part[blockIdx.x] = part;
	}
}

__global__ static void mean_loss(float *loss, int g, long long B)
{
	double total = 0.0;
	for (int t = 0; t < g; t++)
		total += g_part[t];
	*loss = (float)(total / (double)B);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long B = in[0].shape[0], C = in[0].shape[1];
	long long blocks = (B + WARPS - 1) / WARPS;
	int g = (int)(blocks < MAXG ? blocks : MAXG);
	cudaStream_t s = (cudaStream_t)stream;

	row_losses<<<g, THREADS, 0, s>>>((const float *)in[0].data,
					 (const int32_t *)in[1].data, B, C);
	mean_loss<<<1, 1, 0, s>>>((float *)out[0].data, g, B);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
