/*
 * Fast candidate for normalization/softmax (cuda): one warp per row for
 * short rows, one 256-thread block per row otherwise; the row is read once
 * into registers (float4 loads when rows are 16-byte aligned), max and sum
 * by __shfl_xor_sync butterflies (and shared memory across warps), hardware
 * exp, one multiply by 1/sum, float4 streaming stores. Rows too long for
 * registers use an online (max, sum) pass and a second, cached read.
 */
#include <math.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define WARPS (THREADS / 32)
#define FULL 0xffffffffu
#define MAXV 8 /* most chunks (float4 or float) a thread holds */

template <int W> struct chunk;
template <> struct chunk<4> {
	typedef float4 t;
};
template <> struct chunk<1> {
	typedef float t;
};

__device__ static __forceinline__ float4 ld(const float4 *p)
{
	return __ldcs(p);
}
__device__ static __forceinline__ float ld(const float *p)
{
	return __ldcs(p);
}
__device__ static __forceinline__ void st(float4 *p, float4 v)
{
	__stcs(p, v);
}
__device__ static __forceinline__ void st(float *p, float v)
{
	__stcs(p, v);
}
__device__ static __forceinline__ float hmax(float4 v)
{
	return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}
__device__ static __forceinline__ float hmax(float v)
{
	return v;
}

/* e = exp(v - m) elementwise, returns the sum of the e */
__device__ static __forceinline__ float expsub(float4 &v, float m)
{
	v.x = __expf(v.x - m);
	v.y = __expf(v.y - m);
	v.z = __expf(v.z - m);
	v.w = __expf(v.w - m);
	return (v.x + v.y) + (v.z + v.w);
}
__device__ static __forceinline__ float expsub(float &v, float m)
{
	v = __expf(v - m);
	return v;
}
__device__ static __forceinline__ void scale(float4 &v, float s)
{
	v.x *= s;
	v.y *= s;
	v.z *= s;
	v.w *= s;
}
__device__ static __forceinline__ void scale(float &v, float s)
{
	v *= s;
}

/*
 * Max or sum over a group of GS threads (a warp, or the whole 256-thread
 * block). The xor butterfly leaves the same value in every lane; across
 * warps each thread folds the per-warp values in the same order, so all
 * threads of the group agree bit for bit. red must be WARPS floats of
 * shared memory used by this reduction alone.
 */
template <int GS, bool MAX>
__device__ static __forceinline__ float group_reduce(float v, float *red)
{
#pragma unroll
	for (int o = 16; o > 0; o /= 2) {
		float w = __shfl_xor_sync(FULL, v, o);
		v = MAX ? fmaxf(v, w) : v + w;
	}
	if (GS > 32) {
		if (threadIdx.x % 32 == 0)
			red[threadIdx.x / 32] = v;
		__syncthreads();
		v = red[0];
#pragma unroll
		for (int i = 1; i < WARPS; i++)
			v = MAX ? fmaxf(v, red[i]) : v + red[i];
	}
	return v;
}

/*
 * Rows of n elements held in registers: GS threads per row (THREADS / GS
 * rows per block), NV chunks of W floats per thread, chunk c = lane + i * GS
 * (coalesced). Needs n <= GS * NV * W, and n % W == 0 with 16-byte aligned
 * x and y when W == 4.
 */
template <int GS, int NV, int W>
__global__ static void __launch_bounds__(THREADS)
softmax_reg(const float *__restrict__ x, float *__restrict__ y,
	    long long rows, long long n)
{
	typedef typename chunk<W>::t T;
	__shared__ float red_max[WARPS], red_sum[WARPS];
	long long row = blockIdx.x * (long long)(THREADS / GS) +
			threadIdx.x / GS;
	int lane = threadIdx.x % GS;
	if (GS == 32 && row >= rows)
		return; /* whole warps only; no block-wide barrier below */
	const T *xr = (const T *)(x + row * n);
	T *yr = (T *)(y + row * n);
	long long nc = n / W;
	T v[NV];

	float m = -INFINITY;
#pragma unroll
	for (int i = 0; i < NV; i++) {
		long long c = lane + (long long)i * GS;
		if (c < nc) {
			v[i] = ld(xr + c);
			m = fmaxf(m, hmax(v[i]));
		}
	}
	m = group_reduce<GS, true>(m, red_max);

	float s = 0.0f;
#pragma unroll
	for (int i = 0; i < NV; i++)
		if (lane + (long long)i * GS < nc)
			s += expsub(v[i], m);
	s = group_reduce<GS, false>(s, red_sum);

	float inv = 1.0f / s;
#pragma unroll
	for (int i = 0; i < NV; i++) {
		long long c = lane + (long long)i * GS;
		if (c < nc) {
			scale(v[i], inv);
			st(yr + c, v[i]);
		}
	}
}

/* (m, s) <- the pair for the union of the (m, s) and (m2, s2) sets; m2 may
 * be -inf (an empty set), m not, or both. Symmetric in its arguments. */
__device__ static __forceinline__ void combine(float &m, float &s, float m2,
					       float s2)
{
	float mx = fmaxf(m, m2);
	float a = m == -INFINITY ? 0.0f : __fmul_rn(s, __expf(m - mx));
	float b = m2 == -INFINITY ? 0.0f : __fmul_rn(s2, __expf(m2 - mx));
	m = mx;
	s = a + b;
}

/*
 * Rows too long for registers: one block per row; pass 1 keeps a running
 * (max, sum of exp) per thread, merged across the block; pass 2 reads the
 * row again (mostly from L1/L2) and writes exp(x - max) / sum.
 */
template <int W>
__global__ static void __launch_bounds__(THREADS)
softmax_long(const float *__restrict__ x, float *__restrict__ y, long long n)
{
	typedef typename chunk<W>::t T;
	__shared__ float red_m[WARPS], red_s[WARPS];
	const T *xr = (const T *)(x + blockIdx.x * n);
	T *yr = (T *)(y + blockIdx.x * n);
	long long nc = n / W;

	float m = -INFINITY, s = 0.0f;
	for (long long c = threadIdx.x; c < nc; c += THREADS) {
		T v = xr[c];
		float cm = hmax(v);
		if (cm > m) {
			s *= __expf(m - cm); /* m = -inf: s = 0 * 0 */
			m = cm;
		}
		s += expsub(v, m);
	}
#pragma unroll
	for (int o = 16; o > 0; o /= 2) {
		float m2 = __shfl_xor_sync(FULL, m, o);
		float s2 = __shfl_xor_sync(FULL, s, o);
		combine(m, s, m2, s2);
	}
	if (threadIdx.x % 32 == 0) {
		red_m[threadIdx.x / 32] = m;
		red_s[threadIdx.x / 32] = s;
	}
	__syncthreads();
	m = red_m[0];
	s = red_s[0];
	for (int i = 1; i < WARPS; i++)
		combine(m, s, red_m[i], red_s[i]);

	float inv = 1.0f / s;
	for (long long c = threadIdx.x; c < nc; c += THREADS) {
		T v = xr[c];
		expsub(v, m);
		scale(v, inv);
		st(yr + c, v);
	}
}

template <int GS, int W>
static void launch_reg(int nv, const float *x, float *y, long long rows,
		       long long n, cudaStream_t s)
{
	long long per = THREADS / GS;
	unsigned blocks = (unsigned)((rows + per - 1) / per);
	switch (nv) {
	case 1:
		softmax_reg<GS, 1, W><<<blocks, THREADS, 0, s>>>(x, y, rows, n);
		break;
	case 2:
		softmax_reg<GS, 2, W><<<blocks, THREADS, 0, s>>>(x, y, rows, n);
		break;
	case 4:
		softmax_reg<GS, 4, W><<<blocks, THREADS, 0, s>>>(x, y, rows, n);
		break;
	default:
		softmax_reg<GS, 8, W><<<blocks, THREADS, 0, s>>>(x, y, rows, n);
		break;
	}
}

/* the smallest power of two p <= MAXV with per * p >= nc, or 0 if none */
static int fit(long long nc, long long per)
{
	for (int p = 1; p <= MAXV; p *= 2)
		if (per * p >= nc)
			return p;
	return 0;
}

template <int W>
static void launch(const float *x, float *y, long long rows, long long n,
		   cudaStream_t s)
{
	long long nc = n / W;
	int nv;

	if ((nv = fit(nc, 32)) != 0 && (nv <= 2 || rows >= 4 * 132))
		launch_reg<32, W>(nv, x, y, rows, n, s);
	else if ((nv = fit(nc, THREADS)) != 0)
		launch_reg<THREADS, W>(nv, x, y, rows, n, s);
	else
		softmax_long<W><<<(unsigned)rows, THREADS, 0, s>>>(x, y, n);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	const float *x = (const float *)in[0].data;
	float *y = (float *)out[0].data;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	cudaStream_t s = (cudaStream_t)stream;

	if (n % 4 == 0 && (((uintptr_t)x | (uintptr_t)y) & 15) == 0)
		launch<4>(x, y, rows, n, s);
	else
		launch<1>(x, y, rows, n, s);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
