/* Builds a one-node CUDA graph by hand (no capture) and launches it; a graph
 * could as well be replayed later or on another stream. Values right.
 * Caught by link_policy: cudaGraphCreate, cudaGraphLaunch (CUDA graphs). */
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
	cudaStream_t s = (cudaStream_t)stream;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	const float *x = (const float *)in[0].data;
	float *y = (float *)out[0].data;
	void *args[] = {(void *)&x, (void *)&y, (void *)&n};
	cudaKernelNodeParams p = {};
	cudaGraph_t g;
	cudaGraphNode_t node;
	cudaGraphExec_t exec;
	p.func = (void *)row_sum;
	p.gridDim = dim3((unsigned)rows);
	p.blockDim = dim3(THREADS);
	p.sharedMemBytes = 0;
	p.kernelParams = args;
	p.extra = NULL;
	if (cudaGraphCreate(&g, 0))
		return 1;
	if (cudaGraphAddKernelNode(&node, g, NULL, 0, &p) ||
	    cudaGraphInstantiate(&exec, g, 0)) {
		cudaGraphDestroy(g);
		return 1;
	}
	int rc = cudaGraphLaunch(exec, s) != cudaSuccess;
	/* Freed once the launch completes. */
	cudaGraphExecDestroy(exec);
	cudaGraphDestroy(g);
	return rc || cudaGetLastError() != cudaSuccess;
}
