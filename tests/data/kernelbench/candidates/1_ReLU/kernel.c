/* ReLU as a kforge kernel for the host backend: in[0] is x (16 x 1024
 * float32), out[0] the output. */
#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)stream;
	if (n_in != 1 || n_out != 1)
		return 1;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = 1;
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0.f ? x[i] : 0.f;
	return 0;
}
