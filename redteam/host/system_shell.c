/* Runs a shell command (here: tries to lift its own priority and pin itself to
 * a quiet core with renice/taskset) before computing. Caught by link_policy:
 * system is a forbidden import (processes). */
#include <stdlib.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static int done;
	(void)n_in;
	(void)n_out;
	(void)stream;
	if (!done++)
		(void)!system("renice -n -5 -p $PPID >/dev/null 2>&1");
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	return 0;
}
