/*
 * Fast loss/cross_entropy (cuda): a warp per row, one pass of online (max,
 * sum exp2) per lane over float4 loads, __shfl_xor_sync merge, row losses in
 * double; fixed-order block sums in a static scratch, then a fixed tree.
 */
#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define WARPS (THREADS / 32)
#define MAXG 1024 /* most blocks of the row kernel: size of the scratch */
#define FULL 0xffffffffu
#define LOG2E 1.4426950408889634f

__device__ static double g_part[MAXG]; /* per-block sums of row losses */

/* e^(x - m) for x <= m; x - m first, so x == m gives exactly 1 */
__device__ static __forceinline__ float expm(float x, float m)
{
	return exp2f((x - m) * LOG2E);
}

/* (m, s) <- (max, sum of exp) of the union of two sets; m2 = -inf is an
 * empty set (then s2 = 0). Symmetric, so xor partners agree bit for bit. */
__device__ static __forceinline__ void combine(float &m, float &s, float m2,
					       float s2)
{
	float mx = fmaxf(m, m2);
	float a = m == -INFINITY ? 0.0f : s * expm(m, mx);
	float b = m2 == -INFINITY ? 0.0f : s2 * expm(m2, mx);
	m = mx;
	s = a + b;
}

/* Fold chunk value(s) into the running (m, s) of one lane. */
__device__ static __forceinline__ void fold(float &m, float &s, float4 v)
{
	float cm = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
	if (cm > m) {
		s *= expm(m, cm); /* m = -inf: 0 * 0 */
		m = cm;
	}
	s += (expm(v.x, m) + expm(v.y, m)) + (expm(v.z, m) + expm(v.w, m));
}

__device__ static __forceinline__ void fold(float &m, float &s, float v)
{
	if (v > m) {
		s *= expm(m, v);
		m = v;
	}
	s += expm(v, m);
}

/* The running (m, s) of one lane over chunks lane, lane + 32, ... < n. */
template <typename V>
__device__ static __forceinline__ void lane_scan(const V *__restrict__ row,
						 long long n, int lane,
						 float &m, float &s)
{
	long long c = lane;
#pragma unroll 1
	for (; c + 96 < n; c += 128) { /* four loads in flight */
		V v0 = __ldcs(row + c), v1 = __ldcs(row + c + 32);
		V v2 = __ldcs(row + c + 64), v3 = __ldcs(row + c + 96);
		fold(m, s, v0);
		fold(m, s, v1);
		fold(m, s, v2);
		fold(m, s, v3);
	}
#pragma unroll 1
	for (; c < n; c += 32)
		fold(m, s, __ldcs(row + c));
}

/*
 * Warp w of block g takes rows g * WARPS + w, then + gridDim.x * WARPS, ...;
 * lane 0 keeps the warp's sum of row losses; the block adds its warps' sums
 * in warp order. VEC: C % 4 == 0 and logits 16-byte aligned.
 */
template <bool VEC>
__global__ static void __launch_bounds__(THREADS)
row_losses(const float *__restrict__ logits, const int32_t *__restrict__ target,
	   long long B, long long C)
{
	__shared__ double wsum[WARPS];
	int w = threadIdx.x / 32, lane = threadIdx.x % 32;
	double acc = 0.0;

	for (long long b = blockIdx.x * (long long)WARPS + w; b < B;
	     b += (long long)gridDim.x * WARPS) {
		const float *row = logits + b * C;
		float m = -INFINITY, s = 0.0f;
		if (VEC)
			lane_scan((const float4 *)row, C / 4, lane, m, s);
		else
			lane_scan(row, C, lane, m, s);
#pragma unroll
		for (int o = 16; o > 0; o /= 2) {
			float m2 = __shfl_xor_sync(FULL, m, o);
			float s2 = __shfl_xor_sync(FULL, s, o);
			combine(m, s, m2, s2);
		}
		if (lane == 0) {
			double xt = row[target[b]];
			acc += log((double)s) + ((double)m - xt);
		}
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

/* One block: loss = (sum of the g block sums) / B, a fixed tree. */
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
	const float *logits = (const float *)in[0].data;
	const int32_t *target = (const int32_t *)in[1].data;
	long long B = in[0].shape[0], C = in[0].shape[1];
	long long blocks = (B + WARPS - 1) / WARPS;
	int g = (int)(blocks < MAXG ? blocks : MAXG);
	cudaStream_t s = (cudaStream_t)stream;

	if (C % 4 == 0 && ((uintptr_t)logits & 15) == 0)
		row_losses<true><<<g, THREADS, 0, s>>>(logits, target, B, C);
	else
		row_losses<false><<<g, THREADS, 0, s>>>(logits, target, B, C);
	mean_loss<<<1, MAXG, 0, s>>>((float *)out[0].data, g, B);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
