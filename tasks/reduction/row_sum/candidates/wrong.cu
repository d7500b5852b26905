/*
 * Wrong candidate for reduction/row_sum (cuda): one warp per row, but the
 * shuffle reduction starts at offset 8 (left from a 16-lane version), so
 * lane 0 never adds the partial sums of lanes 16..31: rows longer than 16
 * come out short.
 */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define THREADS 256
#define FULL 0xffffffffu

__global__ static void row_sum(const float *x, float *y, long long rows,
			       long long n)
{
	long long row = blockIdx.x * (long long)(THREADS / 32) +
			threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (row >= rows)
		return;
	const float *xr = x + row * n;

	float sum = 0.0f;
	for (long long j = lane; j < n; j += 32)
		sum += xr[j];
	for (int o = 8; o > 0; o /= 2) /* bug: should start at 16 */
		sum += __shfl_down_sync(FULL, sum, o);
	if (lane == 0)
		y[row] = sum;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	long long per = THREADS / 32;
	row_sum<<<(unsigned)((rows + per - 1) / per), THREADS, 0,
		  (cudaStream_t)stream>>>((const float *)in[0].data,
					  (float *)out[0].data, rows, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
