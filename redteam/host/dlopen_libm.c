/* Loads a library the task does not allow at run time (dlopen + dlsym of
 * libm's tanhf) instead of linking it, so a check of the link line sees
 * nothing. Caught by link_policy: dlopen and dlsym are forbidden imports. */
#include <dlfcn.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static float (*tanh_fn)(float);
	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!tanh_fn) {
		void *lib = dlopen("libm.so.6", RTLD_NOW);
		if (!lib)
			return 1;
		*(void **)&tanh_fn = dlsym(lib, "tanhf");
		if (!tanh_fn)
			return 1;
	}
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = kf_numel(&in[0]);
	const float c = 0.7978845608028654f;
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = c * (v + 0.044715f * v * v * v);
		y[i] = 0.5f * v * (1.0f + tanh_fn(u));
	}
	return 0;
}
