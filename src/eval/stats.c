/*
 * stats.c: the judge's statistics: median, quartiles and a distribution-free
 * 95 % confidence interval of the median from order statistics (so that no
 * normality is assumed of timing samples, which are skewed).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/eval.h>

#include "eval_int.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Linear interpolation between order statistics, q in [0, 1]. */
static double quantile(const double *sorted, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)floor(pos);
	if (i >= n - 1)
		return sorted[n - 1];
	double f = pos - i;
	return sorted[i] * (1 - f) + sorted[i + 1] * f;
}

void kf_summarize(const double *x, int n, struct kf_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
	if (n <= 0)
		return;
	double *v = kf_xmalloc(sizeof(double) * (size_t)n);
	memcpy(v, x, sizeof(double) * (size_t)n);
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += v[i];
	s->mean = sum / n;
	s->min = v[0];
	s->max = v[n - 1];
	s->median = quantile(v, n, 0.5);
	s->q1 = quantile(v, n, 0.25);
	s->q3 = quantile(v, n, 0.75);
	/* Ranks (1-based) l and u with P(x_(l) <= median <= x_(u)) >= 0.95
	 * by the normal approximation to Binomial(n, 1/2). */
	double h = 1.959964 * sqrt((double)n) / 2.0;
	int l = (int)floor(n / 2.0 - h);
	int u = (int)ceil(n / 2.0 + 1.0 + h);
	if (l < 1)
		l = 1;
	if (u > n)
		u = n;
	s->ci_lo = v[l - 1];
	s->ci_hi = v[u - 1];
	free(v);
}

void kf_summary_json(cJSON *parent, const char *key, const double *x, int n,
		     double scale)
{
	struct kf_summary m;
	kf_summarize(x, n, &m);
	cJSON *o = cJSON_AddObjectToObject(parent, key);
	cJSON_AddNumberToObject(o, "n", n);
	cJSON_AddNumberToObject(o, "median", m.median * scale);
	cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
	cJSON_AddItemToArray(ci, cJSON_CreateNumber(m.ci_lo * scale));
	cJSON_AddItemToArray(ci, cJSON_CreateNumber(m.ci_hi * scale));
	cJSON_AddNumberToObject(o, "iqr", (m.q3 - m.q1) * scale);
	cJSON_AddNumberToObject(o, "min", m.min * scale);
	cJSON_AddNumberToObject(o, "max", m.max * scale);
	cJSON_AddNumberToObject(o, "mean", m.mean * scale);
}

double kf_half_width(const double *x, int n)
{
	struct kf_summary m;
	kf_summarize(x, n, &m);
	if (m.median <= 0)
		return INFINITY;
	return fmax(m.median - m.ci_lo, m.ci_hi - m.median) / m.median;
}

void kf_pairs_json(cJSON *tm, const double *c, const double *r, int n, bool met)
{
	cJSON_AddBoolToObject(tm, "ci_target_met", met);
	kf_summary_json(tm, "reference", r, n, 1e-6);
	kf_summary_json(tm, "candidate", c, n, 1e-6);
	/* The speedup of each interleaved pair, so that drifts common to
	 * both (clock, other load) cancel. */
	double *ratio = kf_xmalloc(sizeof(double) * (size_t)n);
	for (int i = 0; i < n; i++)
		ratio[i] = c[i] > 0 ? r[i] / c[i] : 0;
	kf_summary_json(tm, "speedup", ratio, n, 1.0);
	free(ratio);
}
