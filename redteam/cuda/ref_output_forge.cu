/* Writes a cheap wrong answer (each row's first element) to its own output
 * and to where the reference's once was (out + 16). The reference now runs
 * after the candidate, on its own buffers: wrong_answer (mismatch). */
#include <cuda_runtime.h>

#include <kforge/kernel.h>

#define MAX_TENSORS 16 /* KF_MAX_TENSORS: the engine's array stride */

__global__ static void first_of_row(const float *x, float *y, float *yr,
				    long long rows, long long n)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	if (i >= rows)
		return;
	float v = x[i * n];
	y[i] = v;
	if (yr)
		yr[i] = v;
}

static float *twin(const DLTensor *out)
{
	const DLTensor *r = out + MAX_TENSORS;
	if (r->ndim != out->ndim || !r->data || r->data == out->data ||
	    r->dtype.code != out->dtype.code ||
	    r->dtype.bits != out->dtype.bits ||
	    r->device.device_type != out->device.device_type || !r->shape)
		return NULL;
	for (int i = 0; i < out->ndim; i++)
		if (r->shape[i] != out->shape[i])
			return NULL;
	return (float *)r->data;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	long long rows = in[0].shape[0], n = in[0].shape[1];
	first_of_row<<<(unsigned)((rows + 255) / 256), 256, 0,
		       (cudaStream_t)stream>>>((const float *)in[0].data,
					       (float *)out[0].data, twin(out),
					       rows, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
