/* Launches from a POSIX thread (a helper that could as well keep working
 * after the call returns); here it is joined, so the values are right.
 * Caught by link_policy: pthread_create (threads). */
#include <pthread.h>

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

struct job {
	const float *x;
	float *y;
	long long rows, n;
	cudaStream_t s;
	int rc;
};

static void *worker(void *arg)
{
	struct job *j = (struct job *)arg;
	row_sum<<<(unsigned)j->rows, THREADS, 0, j->s>>>(j->x, j->y, j->n);
	j->rc = cudaGetLastError() != cudaSuccess;
	return NULL;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	struct job j = {(const float *)in[0].data,
			(float *)out[0].data,
			in[0].shape[0],
			in[0].shape[1],
			(cudaStream_t)stream,
			0};
	pthread_t t;
	if (pthread_create(&t, NULL, worker, &j))
		return 1;
	pthread_join(t, NULL);
	return j.rc;
}
