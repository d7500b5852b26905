/* Honest: C++ static initialisation (a global object whose constructor fills
 * a table with std::vector and libm) runs while the runner loads the object,
 * inside the confinement; the kernel sums with the table's weights (all 1).
 * Must stay ok. */
#include <cmath>
#include <vector>

#include <cuda_runtime.h>

#include <kforge/kernel.h>

struct table {
	std::vector<float> w;
	table() : w(32)
	{
		for (size_t i = 0; i < w.size(); i++)
			w[i] = std::cos(0.0f);
	}
};

static table weights; /* built before kf_entry can be called */

__global__ static void row_sum(const float *x, float *y, long long rows,
			       long long n, float scale)
{
	long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (b >= rows)
		return;
	float sum = 0.0f;
	for (long long j = 0; j < n; j++)
		sum += x[b * n + j];
	y[b] = sum * scale;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	row_sum<<<(unsigned)((rows + 127) / 128), 128, 0,
		  (cudaStream_t)stream>>>((const float *)in[0].data,
					  (float *)out[0].data, rows, n,
					  weights.w[7]);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
