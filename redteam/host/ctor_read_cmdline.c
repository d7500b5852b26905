/* In a constructor, scans /proc by raw getdents64 and reads every other
 * process's cmdline and environ, looking for the supervisor's --seed (which
 * would let it predict the inputs). Wins (sums honestly) if it can read any
 * other process's; must see only itself: zeros, wrong_answer/mismatch. */
#include "raw.h"

static int won;

__attribute__((constructor)) static void early(void)
{
	static char dents[8192], buf[8192], path[64];
	long self = raw3(NR_getpid, 0, 0, 0);
	long dir = raw_open("/proc");
	long n;
	while (dir >= 0 && (n = raw3(NR_getdents64, dir, dents, sizeof(dents))) > 0) {
		for (long off = 0; off < n;) {
			unsigned short reclen = *(unsigned short *)(dents + off + 16);
			const char *name = dents + off + 19;
			off += reclen;
			long pid = 0;
			for (const char *p = name; *p >= '0' && *p <= '9'; p++)
				pid = pid * 10 + (*p - '0');
			if (pid <= 0 || pid == self)
				continue;
			proc_path(path, pid, "cmdline");
			if (raw_slurp(path, buf, sizeof(buf)) > 0)
				won = 1;
			proc_path(path, pid, "environ");
			if (raw_slurp(path, buf, sizeof(buf)) > 0)
				won = 1;
		}
	}
	/* The parent by number, listed or not. */
	proc_path(path, raw3(NR_getppid, 0, 0, 0), "cmdline");
	if (raw_slurp(path, buf, sizeof(buf)) > 0)
		won = 1;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	return row_sum_if(won, in, out);
}
