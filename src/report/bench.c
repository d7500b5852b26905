/*
 * bench.c: the report of `kforge bench --json`'s summary: fast_p against
 * p for eager and each further baseline, the speedups per level, the
 * verdicts by reason, the timing and roofline of the fastest candidates,
 * the environment and cost; and the bench as CSV, one row per task.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

/* The level of a task id "levelN/...", 0 when it has none. */
static int level_of(const cJSON *row)
{
	const char *t = kf_json_str(row, "task");
	if (!t || strncmp(t, "level", 5))
		return 0;
	return atoi(t + 5);
}

/* "status", "status/check" or the item's error. */
static char *verdict(const cJSON *row)
{
	const char *st = kf_json_str(row, "status");
	const char *ck = kf_json_str(row, "check");
	const char *er = kf_json_str(row, "error");
	if (ck)
		return kf_xasprintf("%s/%s", st ? st : "?", ck);
	if (er && (!st || strcmp(st, "ok")))
		return kf_xasprintf("%s (%s)", st ? st : "?", er);
	return kf_xstrdup(st ? st : "?");
}

int kf_report_bench_check(const cJSON *bench, const char *where,
			  struct kf_err *err)
{
	if (!cJSON_IsObject(bench))
		return kf_err_set(err, KF_EINVAL,
				  "%s: not a JSON object (expected the "
				  "summary that kforge bench --json prints)",
				  where);
	const cJSON *first = bench->child;
	if (cJSON_IsArray(first) &&
	    cJSON_GetObjectItem(cJSON_GetArrayItem(first, 0), "sample_id"))
		return kf_err_set(err, KF_EINVAL,
				  "%s: this is KernelBench's eval_results.json "
				  "(kforge bench --out); give the summary "
				  "that kforge bench --json prints",
				  where);
	if (!cJSON_IsArray(cJSON_GetObjectItem(bench, "tasks")))
		return kf_err_set(err, KF_EINVAL,
				  "%s: no \"tasks\" array: not the summary "
				  "that kforge bench --json prints",
				  where);
	if (!cJSON_IsObject(cJSON_GetObjectItem(bench, "baselines")))
		return kf_err_set(err, KF_EINVAL,
				  "%s: no \"baselines\" object: not the "
				  "summary that kforge bench --json prints",
				  where);
	const cJSON *row;
	int i = 0;
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(bench, "tasks"))
	{
		if (!kf_json_str(row, "task") || !kf_json_str(row, "status"))
			return kf_err_set(err, KF_EINVAL,
					  "%s: tasks[%d] has no \"task\" and "
					  "\"status\" strings",
					  where, i);
		i++;
	}
	return 0;
}

static void summary_section(cJSON *model, const cJSON *b, const char *where)
{
	cJSON *sec = rp_section(model, "bench", "Bench");
	rp_text(sec, "From %s.", where);
	static const char *const cols[] = {
	    "baseline",	       "tasks", "correct", "correctness rate",
	    "geomean speedup", "timed", "lacked",  NULL};
	cJSON *rows = rp_table(sec, cols);
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(b, "baselines"))
	{
		char n[32], c[32], t[32], l[32];
		snprintf(n, sizeof(n), "%g", kf_json_num(m, "n", 0));
		snprintf(c, sizeof(c), "%g", kf_json_num(m, "correct", 0));
		snprintf(t, sizeof(t), "%g", kf_json_num(m, "timed", 0));
		snprintf(l, sizeof(l), "%g", kf_json_num(m, "lacked", 0));
		const char *g = rp_num(kf_json_num(m, "geomean_speedup", NAN));
		rp_row(rows, 7, m->string, n, c,
		       rp_num(kf_json_num(m, "correctness_rate", NAN)),
		       g ? g : "-", t, l);
	}
	static const char *const kv[] = {"field", "value", NULL};
	rows = rp_table(sec, kv);
	rp_kv(rows, "backend", kf_json_str(b, "backend"));
	rp_kv(rows, "protocol", kf_json_str(b, "protocol"));
	rp_kv(rows, "KernelBench's eval_results.json",
	      kf_json_str(b, "eval_results"));
}

static void fast_p_chart(cJSON *sec, const cJSON *b)
{
	cJSON *cfg = rp_chart(sec, "fast-p", "fast_p against p", "scatter");
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(b, "baselines"))
	{
		cJSON *ds = rp_dataset(cfg, m->string, NULL);
		cJSON_AddBoolToObject(ds, "showLine", true);
		cJSON_AddBoolToObject(ds, "stepped", false);
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(m, "fast_p"))
		{
			if (cJSON_IsNumber(p))
				rp_point(ds, strtod(p->string, NULL),
					 p->valuedouble);
		}
	}
	rp_axis(cfg, "x", "p (speedup threshold)", "linear");
	cJSON *y = rp_axis(cfg, "y", "fast_p (share of tasks)", "linear");
	cJSON_AddNumberToObject(y, "min", 0);
	cJSON_AddNumberToObject(y, "max", 1);
	rp_chart_note(cfg, sec,
		      "fast_p: the share of all tasks whose candidate is "
		      "correct and faster than the baseline by more than p "
		      "(KernelBench's metric), one line per baseline.");
}

static void levels_chart(cJSON *sec, const cJSON *b)
{
	const cJSON *rows = cJSON_GetObjectItem(b, "tasks");
	int max_level = 0, i = 0;
	const cJSON *row;
	cJSON_ArrayForEach(row, rows)
	{
		if (level_of(row) > max_level)
			max_level = level_of(row);
	}
	cJSON *cfg =
	    rp_chart(sec, "levels", "Speedup over eager per level", "scatter");
	cJSON *by_level[16] = {NULL};
	for (int l = 0; l <= max_level && l < 16; l++) {
		char *label =
		    l ? kf_xasprintf("level %d", l) : kf_xstrdup("no level");
		by_level[l] = rp_dataset(cfg, label, NULL);
		cJSON_AddNumberToObject(by_level[l], "pointRadius", 5);
		free(label);
	}
	double lo = INFINITY, hi = -INFINITY;
	cJSON_ArrayForEach(row, rows)
	{
		int l = level_of(row);
		double s = kf_json_num(row, "speedup", NAN);
		i++;
		if (l >= 16 || !(s > 0))
			continue;
		/* A fixed spread within the level, so points do not hide
		 * each other. */
		double jitter = fmod(i * 0.6180339887, 1.0) * 0.5 - 0.25;
		rp_point(by_level[l], l + jitter, s);
		lo = fmin(lo, s);
		hi = fmax(hi, s);
	}
	if (isfinite(lo)) {
		cJSON *one = rp_dataset(cfg, "parity (1x)", NULL);
		cJSON_AddBoolToObject(one, "showLine", true);
		cJSON_AddNumberToObject(one, "pointRadius", 0);
		cJSON_AddNumberToObject(one, "borderWidth", 1);
		rp_point(one, 0, 1);
		rp_point(one, max_level + 1, 1);
	}
	/* Whole levels as ticks: the axis runs from 0 to one past the last
	 * level, in steps of 1. */
	cJSON *x = rp_axis(cfg, "x", "level", "linear");
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(x, "ticks"), "stepSize",
				1);
	rp_axis(cfg, "y", "speedup over eager (x)", "logarithmic");
	rp_chart_note(cfg, sec,
		      "One point per correct, timed candidate, spread "
		      "sideways within its level; candidates that did not "
		      "pass have no speedup and are counted in the verdicts.");
}

static void verdict_chart(cJSON *sec, const cJSON *b)
{
	cJSON *names = cJSON_CreateObject();
	const cJSON *row;
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(b, "tasks"))
	{
		char *v = verdict(row);
		cJSON *n = cJSON_GetObjectItem(names, v);
		if (n)
			cJSON_SetNumberValue(n, n->valuedouble + 1);
		else
			cJSON_AddNumberToObject(names, v, 1);
		free(v);
	}
	cJSON *cfg = rp_chart(sec, "verdicts", "Verdicts by reason", "bar");
	cJSON_AddStringToObject(cJSON_GetObjectItem(cfg, "options"),
				"indexAxis", "y");
	cJSON *labels =
	    cJSON_AddArrayToObject(cJSON_GetObjectItem(cfg, "data"), "labels");
	cJSON *ds = rp_dataset(cfg, "tasks", NULL);
	const cJSON *n;
	cJSON_ArrayForEach(n, names)
	{
		cJSON_AddItemToArray(labels, cJSON_CreateString(n->string));
		rp_value(ds, n->valuedouble);
	}
	cJSON_Delete(names);
	cJSON *x = rp_axis(cfg, "x", "tasks", "linear");
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(x, "ticks"), "stepSize",
				1);
	rp_axis(cfg, "y", "verdict (status/check)", NULL);
	rp_chart_note(cfg, sec,
		      "How many tasks ended with each status and check (or "
		      "why an item has no result).");
}

static int by_speedup(const void *a, const void *b)
{
	double x = kf_json_num(*(const cJSON *const *)a, "speedup", -1);
	double y = kf_json_num(*(const cJSON *const *)b, "speedup", -1);
	return (x < y) - (x > y);
}

static void candidate_sections(cJSON *model, const cJSON *b, int top)
{
	const cJSON *rows = cJSON_GetObjectItem(b, "tasks");
	int n = cJSON_GetArraySize(rows), k = 0;
	const cJSON **v = kf_xcalloc((size_t)n + 1, sizeof(*v));
	const cJSON *row;
	cJSON_ArrayForEach(row, rows)
	{
		if (kf_json_num(row, "speedup", -1) > 0)
			v[k++] = row;
	}
	qsort(v, (size_t)k, sizeof(*v), by_speedup);
	for (int i = 0; i < k && i < top; i++) {
		char *id = kf_xasprintf("candidate-%d", i + 1);
		char *title =
		    kf_xasprintf("Candidate of %s", kf_json_str(v[i], "task"));
		cJSON *sec = rp_section(model, id, title);
		static const char *const cols[] = {"field", "value", NULL};
		cJSON *t = rp_table(sec, cols);
		char *vd = verdict(v[i]);
		rp_kv(t, "verdict", vd);
		free(vd);
		const cJSON *ci = cJSON_GetObjectItem(v[i], "speedup_ci95");
		char *sp = kf_xasprintf(
		    "%.4gx [%.4g, %.4g]", kf_json_num(v[i], "speedup", NAN),
		    cJSON_GetArraySize(ci) == 2
			? cJSON_GetArrayItem(ci, 0)->valuedouble
			: NAN,
		    cJSON_GetArraySize(ci) == 2
			? cJSON_GetArrayItem(ci, 1)->valuedouble
			: NAN);
		rp_kv(t, "speedup over eager [95% interval]", sp);
		free(sp);
		const cJSON *tm = cJSON_GetObjectItem(v[i], "timing");
		if (!tm)
			rp_text(sec, "Timing and roofline: " RP_NOT_RECORDED
				     " in this summary (kforge bench --json "
				     "of an older kforge).");
		else
			rp_candidate_charts(
			    sec, id, tm, cJSON_GetObjectItem(v[i], "roofline"));
		free(id);
		free(title);
	}
	free(v);
}

static void environment_section(cJSON *model, const cJSON *b)
{
	cJSON *sec = rp_section(model, "environment", "Environment and cost");
	cJSON *rows = NULL;
	rp_environment(sec, b, &rows);
	double secs = 0, compile = 0;
	int ns = 0, nc = 0;
	const cJSON *row;
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(b, "tasks"))
	{
		double s = kf_json_num(row, "seconds", NAN);
		double c = kf_json_num(row, "compile_s", NAN);
		if (isfinite(s)) {
			secs += s;
			ns++;
		}
		if (isfinite(c)) {
			compile += c;
			nc++;
		}
	}
	char *s =
	    ns ? kf_xasprintf("%.1f s over %d evaluations", secs, ns) : NULL;
	rp_kv(rows, "evaluation seconds (wall, sum)", s);
	const char *backend = kf_json_str(b, "backend");
	if (backend && !strcmp(backend, "cuda"))
		rp_kv(rows, "GPU-seconds (the evaluations' wall time)", s);
	else
		rp_kv(rows, "GPU-seconds",
		      RP_NOT_RECORDED " (host backend: no GPU used)");
	free(s);
	s = nc ? kf_xasprintf("%.2f s over %d candidates", compile, nc) : NULL;
	rp_kv(rows, "compile seconds (sum)", s);
	free(s);
	rp_kv(rows, "tokens", RP_NOT_RECORDED " (a bench calls no model)");
}

cJSON *kf_report_bench_model(const cJSON *b, const char *where, int top)
{
	char *title =
	    kf_xasprintf("kforge report: bench of %d tasks",
			 cJSON_GetArraySize(cJSON_GetObjectItem(b, "tasks")));
	cJSON *model = rp_model("bench", title);
	free(title);
	summary_section(model, b, where);
	cJSON *sec = rp_section(model, "metrics", "Metrics");
	fast_p_chart(sec, b);
	levels_chart(sec, b);
	verdict_chart(sec, b);
	candidate_sections(model, b, top);
	environment_section(model, b);
	rp_prune(model);
	return model;
}

char *kf_report_bench_csv(const cJSON *b)
{
	static const char *const cols[] = {"task",
					   "level",
					   "status",
					   "check",
					   "error",
					   "speedup",
					   "speedup_lo",
					   "speedup_hi",
					   "speedup_kernelbench",
					   "candidate_ms",
					   "reference_ms",
					   "compile_s",
					   "seconds",
					   NULL};
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; cols[i]; i++)
		rp_csv_str(&sb, cols[i], i == 0);
	/* The further baselines' columns, in the summary's order. */
	const cJSON *m;
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(b, "baselines"))
	{
		if (!strcmp(m->string, "eager"))
			continue;
		char *c = kf_xasprintf("%s_status", m->string);
		rp_csv_str(&sb, c, false);
		free(c);
		c = kf_xasprintf("%s_speedup", m->string);
		rp_csv_str(&sb, c, false);
		free(c);
		c = kf_xasprintf("%s_speedup_over_eager", m->string);
		rp_csv_str(&sb, c, false);
		free(c);
	}
	rp_csv_end(&sb);
	const cJSON *row;
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(b, "tasks"))
	{
		const cJSON *ci = cJSON_GetObjectItem(row, "speedup_ci95");
		const cJSON *tm = cJSON_GetObjectItem(row, "timing");
		rp_csv_str(&sb, kf_json_str(row, "task"), true);
		if (level_of(row))
			rp_csv_num(&sb, level_of(row), false);
		else
			rp_csv_str(&sb, NULL, false);
		rp_csv_str(&sb, kf_json_str(row, "status"), false);
		rp_csv_str(&sb, kf_json_str(row, "check"), false);
		rp_csv_str(&sb, kf_json_str(row, "error"), false);
		rp_csv_num(&sb, kf_json_num(row, "speedup", NAN), false);
		rp_csv_num(&sb,
			   cJSON_GetArraySize(ci) == 2
			       ? cJSON_GetArrayItem(ci, 0)->valuedouble
			       : NAN,
			   false);
		rp_csv_num(&sb,
			   cJSON_GetArraySize(ci) == 2
			       ? cJSON_GetArrayItem(ci, 1)->valuedouble
			       : NAN,
			   false);
		rp_csv_num(&sb, kf_json_num(row, "speedup_kernelbench", NAN),
			   false);
		rp_csv_num(&sb,
			   kf_json_num(cJSON_GetObjectItem(tm, "candidate"),
				       "median", NAN),
			   false);
		rp_csv_num(&sb,
			   kf_json_num(cJSON_GetObjectItem(tm, "reference"),
				       "median", NAN),
			   false);
		rp_csv_num(&sb, kf_json_num(row, "compile_s", NAN), false);
		rp_csv_num(&sb, kf_json_num(row, "seconds", NAN), false);
		cJSON_ArrayForEach(m, cJSON_GetObjectItem(b, "baselines"))
		{
			if (!strcmp(m->string, "eager"))
				continue;
			const cJSON *o = cJSON_GetObjectItem(
			    cJSON_GetObjectItem(row, "baselines"), m->string);
			rp_csv_str(&sb, kf_json_str(o, "status"), false);
			rp_csv_num(&sb, kf_json_num(o, "speedup", NAN), false);
			rp_csv_num(&sb,
				   kf_json_num(o, "speedup_over_eager", NAN),
				   false);
		}
		rp_csv_end(&sb);
	}
	return kf_strbuf_detach(&sb);
}
