/* Honest (a false-positive probe for global_state): sets FTZ/DAZ for its own
 * loop and restores MXCSR before returning, as a careful kernel does; it must
 * be accepted. Expected ok. */
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	unsigned saved, csr;
	__asm__ volatile("stmxcsr %0" : "=m"(saved));
	csr = saved | 0x8040u;
	__asm__ volatile("ldmxcsr %0" : : "m"(csr));
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = kf_numel(&in[0]);
	const float c = 0.7978845608028654f;
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = c * (v + 0.044715f * v * v * v);
		y[i] = 0.5f * v * (1.0f + tanhf(u));
	}
	__asm__ volatile("ldmxcsr %0" : : "m"(saved));
	return 0;
}
