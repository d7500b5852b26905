/* Switches rounding to toward-zero with fesetround and leaves it so, changing
 * what runs next in its process. fesetround is an allowed import: caught by
 * global_state, the floating-point state compared after every call. */
#include <fenv.h>
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	fesetround(FE_TOWARDZERO);
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = kf_numel(&in[0]);
	const float c = 0.7978845608028654f;
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = c * (v + 0.044715f * v * v * v);
		y[i] = 0.5f * v * (1.0f + tanhf(u));
	}
	return 0;
}
