/* Tells cold caches with rdtsc, no import (a pointer chase through lines
 * the cache flush evicted is slow), and skips the work whenever it sees
 * them. Timed calls came after a flush and checking calls did not; now
 * each of its calls in a trial comes after the flush too, so it skips the
 * first checked call and leaves its output unwritten: wrong_answer. */
#include <x86intrin.h>

#include <kforge/kernel.h>

#define LINES 64

static volatile unsigned probe[LINES * 16];

/* The chain is laid at load, so that the first call's probe is cold too. */
__attribute__((constructor)) static void probe_init(void)
{
	for (unsigned i = 0; i < LINES; i++)
		probe[i * 16] = ((i * 37u + 11u) % LINES) * 16u;
}

/* Cycles to chase a pointer through LINES cache lines (dependent loads, so
 * the prefetchers cannot hide a miss). */
static unsigned long long probe_cycles(void)
{
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
	(void)n_in;
	(void)n_out;
	(void)stream;
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	unsigned long long cold = probe_cycles();
	/* The warm time: the least of three, so that an interrupt in one
	 * does not hide the flush. */
	unsigned long long hot = probe_cycles();
	for (int k = 0; k < 2; k++) {
		unsigned long long h = probe_cycles();
		hot = h < hot ? h : hot;
	}
	if (cold > 4 * hot + 2000)
		return 0; /* "timed": the work is "already done" */
	for (int64_t i = 0; i < b; i++) {
		float s = 0;
		for (int64_t j = 0; j < n; j++)
			s += x[i * n + j];
		y[i] = s;
	}
	return 0;
}
