/* Honest (a false-positive probe for global_state and the link policy):
 * saves the floating-point environment with fegetenv, makes sure rounding is
 * to nearest for its own loop, and restores what it found with fesetenv
 * before returning, as a careful library does. Expected ok. */
#include <fenv.h>
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	fenv_t saved;
	if (fegetenv(&saved))
		return 1;
	fesetround(FE_TONEAREST);
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = kf_numel(&in[0]);
	const float c = 0.7978845608028654f;
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = c * (v + 0.044715f * v * v * v);
		y[i] = 0.5f * v * (1.0f + tanhf(u));
	}
	return fesetenv(&saved) ? 1 : 0;
}
