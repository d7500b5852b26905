/* Tells timing from checks with clock_gettime (the timer's cache flush makes a
 * probe slow three calls in a row) and then skips the work. Caught by
 * link_policy: clock_gettime is a forbidden import. */
#include <time.h>

#include <kforge/kernel.h>

#define LINES 64

static long long probe_ns(void)
{
	static volatile unsigned probe[LINES * 16];
	static int ready;
	struct timespec a, b;
	if (!ready) {
		for (unsigned i = 0; i < LINES; i++)
			probe[i * 16] = ((i * 37u + 11u) % LINES) * 16u;
		ready = 1;
	}
	unsigned at = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < LINES; i++)
		at = probe[at];
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec) +
	       (at & 0);
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	static int64_t last_b, last_n;
	static int cold_streak;
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	long long cold = probe_ns();
	long long hot = probe_ns();
	int flushed = cold > 4 * hot + 1000;
	if (b != last_b || n != last_n)
		cold_streak = 0;
	cold_streak = flushed ? cold_streak + 1 : 0;
	last_b = b;
	last_n = n;
	if (cold_streak >= 3)
		return 0;
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	return 0;
}
