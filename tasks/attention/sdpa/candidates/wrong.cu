/*
 * Wrong candidate for attention/sdpa (cuda): the naive warp-per-row kernel
 * with a scaling bug: scores divided by D instead of sqrt(D), so the softmax
 * is too flat (exact only where softmax has one key, S == 1).
 */
#include <math.h>
#include <stdint.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 128
#define WARPS (THREADS / 32)
#define PER 4 /* output columns per lane per pass: 128 per warp */
#define FULL 0xffffffffu

__device__ static __forceinline__ float h2f(uint16_t h)
{
	return __half2float(__ushort_as_half(h));
}

/* q_i . k_j, the same value in every lane */
__device__ static __forceinline__ float dot(const uint16_t *qi,
					   const uint16_t *kj, long long D,
					   int lane)
{
	float part = 0.0f;
	for (long long d = lane; d < D; d += 32)
		part += h2f(qi[d]) * h2f(kj[d]);
	for (int o = 16; o > 0; o /= 2)
		part += __shfl_xor_sync(FULL, part, o);
	return part;
}

__global__ static void __launch_bounds__(THREADS)
sdpa_wrong(const uint16_t *q, const uint16_t *k, const uint16_t *v,
	   uint16_t *o, long long rows, long long S, long long D)
{
	int lane = threadIdx.x % 32;
	float scale = 1.0f / (float)D; /* BUG: 1 / sqrtf(D) */

	for (long long r = blockIdx.x * (long long)WARPS + threadIdx.x / 32;
	     r < rows; r += (long long)gridDim.x * WARPS) {
		long long base = (r / S) * S * D; /* head of row r */
		const uint16_t *qi = q + r * D;
		const uint16_t *kh = k + base, *vh = v + base;

		float max = -INFINITY;
		for (long long j = 0; j < S; j++)
			max = fmaxf(max, dot(qi, kh + j * D, D, lane) * scale);

		for (long long d0 = 0; d0 < D; d0 += 32 * PER) {
			float acc[PER] = {0.0f}, sum = 0.0f;
			for (long long j = 0; j < S; j++) {
				float p = expf(dot(qi, kh + j * D, D, lane) *
						   scale -
					       max);
				sum += p;
				const uint16_t *vj = vh + j * D;
				for (int u = 0; u < PER; u++) {
					long long d = d0 + lane + 32 * u;
					if (d < D)
						acc[u] += p * h2f(vj[d]);
				}
			}
			for (int u = 0; u < PER; u++) {
				long long d = d0 + lane + 32 * u;
				if (d < D)
					o[r * D + d] = __half_as_ushort(
					    __float2half_rn(acc[u] / sum));
			}
		}
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long BH = in[0].shape[0] * in[0].shape[1];
	long long S = in[0].shape[2], D = in[0].shape[3];
	long long rows = BH * S, blocks = (rows + WARPS - 1) / WARPS;

	sdpa_wrong<<<(unsigned)(blocks < (1LL << 20) ? blocks : (1LL << 20)),
		     THREADS, 0, (cudaStream_t)stream>>>(
		(const uint16_t *)in[0].data, (const uint16_t *)in[1].data,
		(const uint16_t *)in[2].data, (uint16_t *)out[0].data, rows, S,
		D);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
