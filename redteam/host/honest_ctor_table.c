/* Honest: a constructor builds a table in memory (the weights 1.0 of each
 * column, a stand-in for a precomputed lookup) and every call sums through
 * malloc'd scratch and libm (fabsf, copysignf); must stay ok under the
 * confinement that runs constructors in the sandbox. */
#include <math.h>
#include <stdlib.h>

#include <kforge/kernel.h>

#define COLS 4096
static float weight[COLS];

__attribute__((constructor)) static void build(void)
{
	for (int j = 0; j < COLS; j++)
		weight[j] = cosf(0.0f) * (float)(j >= 0);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	float *acc = malloc(sizeof(float) * (size_t)b);
	if (!acc)
		return 1;
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j] * (j < COLS ? weight[j] : 1.0f);
		acc[i] = copysignf(fabsf(s), s);
	}
	for (int64_t i = 0; i < b; i++)
		y[i] = acc[i];
	free(acc);
	return 0;
}
