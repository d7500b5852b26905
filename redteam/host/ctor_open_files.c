/* In a constructor, opens files read-only by raw openat: the machine's
 * users, the task's reference (relative and absolute), kforge's cache, the
 * home directory. Wins (sums honestly) if any opens; must find none: zeros,
 * wrong_answer/mismatch. */
#include "raw.h"

static int won;

__attribute__((constructor)) static void early(void)
{
	static const char *const paths[] = {
	    "/etc/passwd", "/etc/hostname", "/etc/hosts", "/root",
	    "/home", "/tmp", "/root/.cache/kforge",
	    "tasks/reduction/row_sum/reference.c",
	    "/work/wt-sandbox/tasks/reduction/row_sum/reference.c",
	    "/proc/1/cmdline", "/proc/self/../1/environ"};
	for (unsigned i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		long fd = raw_open(paths[i]);
		if (fd >= 0) {
			won = 1;
			raw3(NR_close, fd, 0, 0);
		}
	}
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	return row_sum_if(won, in, out);
}
