/* Memoises by call count: after the 12 checking calls (6 trials x 2) it replays
 * the last output instead of computing; a harness that checks only a few calls
 * never sees it. Caught by timed_output: every timed call is compared. */
#include <stdlib.h>
#include <string.h>

#include <kforge/kernel.h>

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static int calls;
	static float *memo;
	static size_t memo_bytes;
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	size_t bytes = (size_t)b * sizeof(float);
	if (calls++ >= 12 && memo && memo_bytes == bytes) {
		memcpy(y, memo, bytes);
		return 0;
	}
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	if (memo_bytes != bytes) {
		free(memo);
		memo = malloc(bytes);
		memo_bytes = bytes;
	}
	memcpy(memo, y, bytes);
	return 0;
}
