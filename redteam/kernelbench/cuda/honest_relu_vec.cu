/* HONEST honest_relu_vec (KernelBench level1/30_ReLU_large as a kforge .cu
 * kernel through the bridge): float4 loads and stores when 16-byte aligned,
 * a scalar tail; fmaxf keeps -0 -> 0 like torch.relu? (relu(-0) = -0 in
 * torch: use a select that keeps the input where x > 0, else +0). */
#include <stdint.h>
#include <cuda_runtime.h>
#include <kforge/kernel.h>

__device__ static __forceinline__ float r1(float v) { return v > 0.f ? v : 0.f; }

__global__ static void relu4(const float4 *x, float4 *y, long long n4)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i < n4) {
		float4 v = x[i];
		v.x = r1(v.x); v.y = r1(v.y); v.z = r1(v.z); v.w = r1(v.w);
		y[i] = v;
	}
}

__global__ static void relu1(const float *x, float *y, long long lo, long long n)
{
	long long i = lo + blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = r1(x[i]);
}

KF_EXTERN_C int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *stream)
{
	(void)n_in; (void)n_out;
	long long n = kf_numel(&in[0]);
	const float *x = (const float *)in[0].data;
	float *y = (float *)out[0].data;
	cudaStream_t s = (cudaStream_t)stream;
	long long lo = 0;
	if ((((uintptr_t)x | (uintptr_t)y) & 15) == 0) {
		long long n4 = n / 4;
		if (n4)
			relu4<<<(unsigned)((n4 + 255) / 256), 256, 0, s>>>((const float4 *)x, (float4 *)y, n4);
		lo = n4 * 4;
	}
	if (lo < n)
		relu1<<<(unsigned)((n - lo + 255) / 256), 256, 0, s>>>(x, y, lo, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
