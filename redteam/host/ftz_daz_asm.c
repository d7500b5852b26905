/* Sets FTZ and DAZ in MXCSR with inline asm (no fesetenv import) and leaves
 * them set: its own math skips subnormals and the state leaks into what runs
 * next. Caught by global_state: MXCSR differs after its call. */
#include <math.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	unsigned csr;
	__asm__ volatile("stmxcsr %0" : "=m"(csr));
	csr |= 0x8040u; /* FTZ (bit 15) | DAZ (bit 6) */
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
	return 0; /* MXCSR deliberately not restored */
}
