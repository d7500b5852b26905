/*
 * A transpose that moves each half through float arithmetic (x * 1 + 0):
 * every finite nonzero value comes back the same, but -0 becomes +0 and a
 * signalling NaN comes back quiet. The task asks for bit-identical
 * outputs; a value comparison cannot see the difference.
 */
#include <kforge/kernel.h>

static float h2f(uint16_t h)
{
	return (float)*(const _Float16 *)&h;
}

static uint16_t f2h(float f)
{
	_Float16 h = (_Float16)f;
	return *(const uint16_t *)&h;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	const uint16_t *x = in[0].data;
	uint16_t *y = out[0].data;
	int64_t M = in[0].shape[0], N = in[0].shape[1];

	(void)n_in;
	(void)n_out;
	(void)stream;
	for (int64_t j = 0; j < N; j++)
		for (int64_t i = 0; i < M; i++)
			*y++ = f2h(h2f(x[i * N + j]) + 0.0f);
	return 0;
}
