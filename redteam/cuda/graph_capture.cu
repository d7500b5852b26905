/* Captures its launch into a CUDA graph and replays the instantiated graph
 * (less launch overhead per call; values right). Caught by link_policy:
 * cudaStreamBeginCapture and cudaGraph* (CUDA graphs). */
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
	static cudaGraphExec_t exec;
	static const void *key_x, *key_y;
	static long long key_rows, key_n;
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	const float *x = (const float *)in[0].data;
	float *y = (float *)out[0].data;

	/* A graph bakes in its pointers: capture again when they move. */
	if (!exec || key_x != x || key_y != y || key_rows != rows ||
	    key_n != n) {
		cudaGraph_t g;
		if (exec)
			cudaGraphExecDestroy(exec);
		exec = NULL;
		if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed))
			return 1;
		row_sum<<<(unsigned)rows, THREADS, 0, s>>>(x, y, n);
		if (cudaStreamEndCapture(s, &g))
			return 1;
		if (cudaGraphInstantiate(&exec, g, 0)) {
			cudaGraphDestroy(g);
			exec = NULL;
			return 1;
		}
		cudaGraphDestroy(g);
		key_x = x;
		key_y = y;
		key_rows = rows;
		key_n = n;
	}
	if (cudaGraphLaunch(exec, s))
		return 1;
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
