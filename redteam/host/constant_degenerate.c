/* Ignores its input and writes zeros: on a task whose reference output is
 * always zero this is right, and no check can object. Expected ok, with the
 * result flagged degenerate (the task, not the candidate, is at fault). */
#include <string.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)in;
	(void)n_in;
	(void)n_out;
	(void)stream;
	memset(out[0].data, 0, (size_t)kf_numel(&out[0]) * sizeof(float));
	return 0;
}
