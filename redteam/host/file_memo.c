/* Memoises results across evaluations in a file under /tmp, keyed by a hash
 * of the inputs: the next run (or the next candidate) reads the answer back.
 * Caught by link_policy: fopen is a forbidden import (files). */
#include <stdio.h>
#include <string.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	uint64_t h = 0xcbf29ce484222325ull;
	for (int64_t i = 0; i < b * n; i += 97)
		h = (h ^ (uint64_t)(x[i] * 1e6f)) * 0x100000001b3ull;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/.rowsum-%016llx",
		 (unsigned long long)h);
	FILE *f = fopen(path, "rb");
	if (f && fread(y, sizeof(float), (size_t)b, f) == (size_t)b) {
		fclose(f);
		return 0;
	}
	if (f)
		fclose(f);
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	f = fopen(path, "wb");
	if (f) {
		fwrite(y, sizeof(float), (size_t)b, f);
		fclose(f);
	}
	return 0;
}
