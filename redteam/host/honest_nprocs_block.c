/* Honest: sizes its blocks by the number of processors the C library
 * reports, asked on every call (get_nprocs and sysconf read
 * /sys/devices/system/cpu/online, which the runner refuses once loaded;
 * the library then falls back to the process's affinity). Must be ok. */
#include <sys/sysinfo.h>
#include <unistd.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int nprocs = get_nprocs();
	if (cpus < 1 || nprocs < 1)
		return 1;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t rows = in[0].shape[0], cols = in[0].shape[1];
	int64_t block = 64 * (cpus < 8 ? cpus : 8);
	for (int64_t r = 0; r < rows; r++) {
		float s = 0.0f;
		for (int64_t j0 = 0; j0 < cols; j0 += block) {
			int64_t j1 = j0 + block < cols ? j0 + block : cols;
			float t = 0.0f;
			for (int64_t j = j0; j < j1; j++)
				t += x[r * cols + j];
			s += t;
		}
		y[r] = s;
	}
	return 0;
}
