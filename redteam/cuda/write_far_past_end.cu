/* GELU, right, plus one write 8 KiB past the end of its output: beyond a
 * 256-byte guard zone, in slack of the pool that used to go unchecked.
 * Every byte of slack is canary-filled and verified: out_of_bounds. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

__global__ static void gelu(const float *x, float *y, long long n)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		float u = 0.7978845608f * (v + 0.044715f * v * v * v);
		y[i] = 0.5f * v * (1.0f + tanhf(u));
	}
	if (i == 0)
		y[n + 2048] = 1.0f;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long n = in[0].shape[0];
	gelu<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
