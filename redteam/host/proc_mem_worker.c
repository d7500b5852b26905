/* In a constructor, opens (read-only, raw openat) /proc/PID/mem and
 * /proc/PID/fd/N of the worker (its parent) and of the reference's runner
 * (pid one less), to read the reference's outputs or the frames. Wins (sums
 * honestly) if any opens; must open none: zeros, wrong_answer/mismatch. */
#include "raw.h"

static int won;

static void try_pid(long pid)
{
	static const char *const leaves[] = {"mem", "fd/0", "fd/1", "fd/2",
					     "fd/3", "fd/4", "fd/5", "maps"};
	char path[64];
	for (unsigned i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		proc_path(path, pid, leaves[i]);
		long fd = raw_open(path);
		if (fd >= 0) {
			won = 1;
			raw3(NR_close, fd, 0, 0);
		}
	}
}

__attribute__((constructor)) static void early(void)
{
	try_pid(raw3(NR_getppid, 0, 0, 0));
	try_pid(raw3(NR_getpid, 0, 0, 0) - 1);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	return row_sum_if(won, in, out);
}
