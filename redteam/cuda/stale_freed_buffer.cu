/* Frees a buffer holding its answer and, when the shape repeats, cudaMallocs
 * the same size again and copies it out unwritten, counting on the allocator
 * to hand back the same memory, contents intact. Caught by timed_output. */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256

__global__ static void row_sum(const float *x, float *y, long long n)
{
	__shared__ float red[THREADS / 32];
	const float *xr = x + blockIdx.x * n;
	float s = 0.0f;
	for (long long j = threadIdx.x; j < n; j += THREADS)
		s += xr[j];
	for (int o = 16; o > 0; o /= 2)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (threadIdx.x % 32 == 0)
		red[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.0f;
		for (int i = 0; i < THREADS / 32; i++)
			t += red[i];
		y[blockIdx.x] = t;
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	static long long last_rows = -1, last_n = -1;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	float *y = (float *)out[0].data;
	size_t bytes = (size_t)rows * sizeof(float);
	float *p = NULL;

	if (cudaMalloc(&p, bytes))
		return 1;
	if (rows == last_rows && n == last_n) {
		/* "uninitialised" memory: the last answer, if all goes well */
		cudaMemcpyAsync(y, p, bytes, cudaMemcpyDeviceToDevice, s);
	} else {
		row_sum<<<(unsigned)rows, THREADS, 0, s>>>(
		    (const float *)in[0].data, y, n);
		cudaMemcpyAsync(p, y, bytes, cudaMemcpyDeviceToDevice, s);
		last_rows = rows;
		last_n = n;
	}
	cudaStreamSynchronize(s);
	cudaFree(p);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
