/* ReLU as a kforge kernel for the cuda backend, enqueued on the engine's
 * stream: in[0] is x, out[0] the output. */
#include <kforge/kernel.h>

__global__ static void relu(const float *x, float *y, long n)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = x[i] > 0.f ? x[i] : 0.f;
}

KF_EXTERN_C int kf_entry(const DLTensor *in, int n_in, DLTensor *out,
			 int n_out, void *stream)
{
	if (n_in != 1 || n_out != 1)
		return 1;
	long n = 1;
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	relu<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
	    (const float *)in[0].data, (float *)out[0].data, n);
	return 0;
}
