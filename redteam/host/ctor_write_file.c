/* In a constructor, creates a file by raw openat (O_CREAT | O_WRONLY) to
 * leave something for a later evaluation; sums honestly. Must be stopped:
 * rejected/sandbox (the filter kills a writing open). */
#include "raw.h"

__attribute__((constructor)) static void early(void)
{
	long fd = raw6(NR_openat, AT_FDCWD_, (long)"/tmp/kforge-left-behind",
		       0101 /* O_WRONLY | O_CREAT */, 0644, 0, 0);
	if (fd >= 0)
		raw3(NR_close, fd, 0, 0);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	return row_sum_if(1, in, out);
}
