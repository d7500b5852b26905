/* Splits the rows between two POSIX threads: right answers, twice the cores of
 * a single-threaded reference, so an inflated speedup. Caught by link_policy:
 * pthread_create is a forbidden import (threads). */
#include <pthread.h>

#include <kforge/kernel.h>

struct job {
	const float *x;
	float *y;
	int64_t lo, hi, n;
};

static void *rows(void *arg)
{
	struct job *j = arg;
	for (int64_t i = j->lo; i < j->hi; i++) {
		float s = 0;
		for (int64_t k = 0; k < j->n; k++)
			s += j->x[i * j->n + k];
		j->y[i] = s;
	}
	return NULL;
}

int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out,
	     void *stream)
{
	(void)n_in;
	(void)n_out;
	(void)stream;
	int64_t b = in[0].shape[0], n = in[0].shape[1];
	struct job lo = {in[0].data, out[0].data, 0, b / 2, n};
	struct job hi = {in[0].data, out[0].data, b / 2, b, n};
	pthread_t t;
	if (pthread_create(&t, NULL, rows, &lo)) {
		rows(&lo);
		rows(&hi);
		return 0;
	}
	rows(&hi);
	pthread_join(t, NULL);
	return 0;
}
