/* Profile trigger for tasks/linear/matmul_bf16, its clean counterpart: one
 * warp per 16x16 tile of C on the tensor cores (nvcuda::wmma bf16
 * fragments, float accumulators), rounded to bfloat16 once; dims that are
 * not multiples of 16 take a scalar kernel. The tensor_cores analyser
 * should stay quiet. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <kforge/kernel.h>

using namespace nvcuda;

__global__ static void mm_wmma(const __nv_bfloat16 *a, const __nv_bfloat16 *b,
			       uint16_t *c, int m, int n, int k)
{
	__shared__ float tile[4][16 * 16];
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	int ti = blockIdx.y, tj = blockIdx.x * 4 + warp;
	if (tj * 16 >= n)
		return;
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16,
		       wmma::row_major>
	    fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16,
		       wmma::row_major>
	    fb;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
	wmma::fill_fragment(acc, 0.0f);
	for (int t = 0; t < k; t += 16) {
		wmma::load_matrix_sync(fa, a + (long long)ti * 16 * k + t, k);
		wmma::load_matrix_sync(fb, b + (long long)t * n + tj * 16, n);
		wmma::mma_sync(acc, fa, fb, acc);
	}
	wmma::store_matrix_sync(tile[warp], acc, 16, wmma::mem_row_major);
	__syncwarp();
	for (int e = lane; e < 256; e += 32)
		c[(long long)(ti * 16 + e / 16) * n + tj * 16 + e % 16] =
		    kf_float_to_bf16(tile[warp][e]);
}

__global__ static void mm_edge(const uint16_t *a, const uint16_t *b,
			       uint16_t *c, int m, int n, int k)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	int i = blockIdx.y * blockDim.y + threadIdx.y;
	if (i >= m || j >= n)
		return;
	float s = 0.0f;
	for (int t = 0; t < k; t++)
		s += kf_bf16_to_float(a[(long long)i * k + t]) *
		     kf_bf16_to_float(b[(long long)t * n + j]);
	c[(long long)i * n + j] = kf_float_to_bf16(s);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	int m = (int)in[0].shape[0], k = (int)in[0].shape[1];
	int n = (int)in[1].shape[1];
	cudaStream_t s = (cudaStream_t)stream;
	if (m % 16 || n % 16 || k % 16) {
		dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
		mm_edge<<<grid, block, 0, s>>>((const uint16_t *)in[0].data,
					       (const uint16_t *)in[1].data,
					       (uint16_t *)out[0].data, m, n, k);
	} else {
		dim3 grid((n / 16 + 3) / 4, m / 16);
		mm_wmma<<<grid, 128, 0, s>>>(
		    (const __nv_bfloat16 *)in[0].data,
		    (const __nv_bfloat16 *)in[1].data, (uint16_t *)out[0].data,
		    m, n, k);
	}
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
