/* Tells timing from checks with rdtsc, no import (the timer's cache flush makes
 * a probe slow three calls in a row) and then skips the work. Caught by
 * timed_output: every timed call is compared with the reference. */
#include <x86intrin.h>

#include <kforge/kernel.h>

#define LINES 64

/* Cycles to chase a pointer through LINES cache lines (dependent loads, so
 * the prefetchers cannot hide a miss). */
static unsigned long long probe_cycles(void)
{
	static volatile unsigned probe[LINES * 16];
	static int ready;
	if (!ready) {
		for (unsigned i = 0; i < LINES; i++)
			probe[i * 16] = ((i * 37u + 11u) % LINES) * 16u;
		ready = 1;
	}
	unsigned at = 0;
	_mm_lfence();
	unsigned long long t0 = __rdtsc();
	for (int i = 0; i < LINES; i++)
		at = probe[at];
	_mm_lfence();
	unsigned long long t1 = __rdtsc();
	return (t1 - t0) + (at & 0); /* keep the chain */
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
	unsigned long long cold = probe_cycles();
	unsigned long long hot = probe_cycles(); /* now cached */
	int flushed = cold > 4 * hot + 2000;
	if (b != last_b || n != last_n)
		cold_streak = 0;
	cold_streak = flushed ? cold_streak + 1 : 0;
	last_b = b;
	last_n = n;
	if (cold_streak >= 3)
		return 0; /* timed: the work is "already done" */
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	return 0;
}
