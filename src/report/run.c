/*
 * run.c: the report of a search run from the store: the speedup of each
 * evaluation with its interval and the best so far, the statuses over
 * time, the lineage of the best candidate, the parameter landscape of a
 * tuner's run, the top candidates' timing and roofline, and the
 * environment and cost; and the run as CSV, one row per evaluation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

#define MAX_PARAMS 8  /* parameters drawn in the landscape */
#define MAX_EDGES 200 /* edges drawn in the lineage */

/* A run read from the store: the run, its candidates (with results) and
 * those evaluated, in the order their evaluations were recorded. */
struct run {
	cJSON *run, *cands;
	const cJSON **ev; /* evaluated candidates */
	int n;
};

static const cJSON *eval_of(const cJSON *c)
{
	const cJSON *e = cJSON_GetObjectItem(c, "evaluation");
	return cJSON_IsObject(e) ? e : NULL;
}

static bool is_ok(const cJSON *c)
{
	const char *st = kf_json_str(eval_of(c), "status");
	return st && !strcmp(st, "ok");
}

static double speedup_of(const cJSON *c)
{
	return is_ok(c) ? kf_json_num(eval_of(c), "speedup", NAN) : NAN;
}

static int by_recorded(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a,
		    *y = *(const cJSON *const *)b;
	const char *tx = kf_json_str(eval_of(x), "created_at");
	const char *ty = kf_json_str(eval_of(y), "created_at");
	int d = strcmp(tx ? tx : "", ty ? ty : "");
	if (d)
		return d;
	double sx = kf_json_num(x, "seq", 0), sy = kf_json_num(y, "seq", 0);
	return (sx > sy) - (sx < sy);
}

static int run_read(struct kf_store *st, int64_t id, struct run *r,
		    struct kf_err *err)
{
	memset(r, 0, sizeof(*r));
	if (kf_store_run_get(st, id, &r->run, err) ||
	    kf_store_candidate_list(st, id, false, true, &r->cands, err)) {
		cJSON_Delete(r->run);
		r->run = NULL;
		return err->code ? err->code : KF_EIO;
	}
	r->ev = kf_xcalloc((size_t)cJSON_GetArraySize(r->cands) + 1,
			   sizeof(*r->ev));
	const cJSON *c;
	cJSON_ArrayForEach(c, r->cands)
	{
		if (eval_of(c))
			r->ev[r->n++] = c;
	}
	qsort(r->ev, (size_t)r->n, sizeof(*r->ev), by_recorded);
	return 0;
}

static void run_release(struct run *r)
{
	cJSON_Delete(r->run);
	cJSON_Delete(r->cands);
	free(r->ev);
}

static const cJSON *by_id(const struct run *r, double id)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, r->cands)
	{
		if (kf_json_num(c, "id", -1) == id)
			return c;
	}
	return NULL;
}

/* The bound i (0: low, 1: high) of an evaluation's speedup interval, or
 * NaN. */
static double ci_at(const cJSON *e, int i)
{
	const cJSON *v =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(e, "speedup_ci95"), i);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A parameter's value as a number (the tuner keeps them as strings), or
 * NaN. */
static double param_num(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return v->valuedouble;
	if (!cJSON_IsString(v) || !*v->valuestring)
		return NAN;
	char *end;
	double d = strtod(v->valuestring, &end);
	return *end ? NAN : d;
}

/* The best candidate: the fastest that passed, the earliest on a tie. */
static const cJSON *best_of(const struct run *r)
{
	const cJSON *best = NULL;
	for (int i = 0; i < r->n; i++) {
		double s = speedup_of(r->ev[i]);
		if (!isfinite(s))
			continue;
		if (!best || s > speedup_of(best) ||
		    (s == speedup_of(best) && kf_json_num(r->ev[i], "seq", 0) <
						  kf_json_num(best, "seq", 0)))
			best = r->ev[i];
	}
	return best;
}

/* "status" or "status/check". */
static char *verdict(const cJSON *c)
{
	const cJSON *e = eval_of(c);
	const char *st = kf_json_str(e, "status");
	const char *ck = kf_json_str(e, "check");
	return ck ? kf_xasprintf("%s/%s", st ? st : "?", ck)
		  : kf_xstrdup(st ? st : "?");
}

static cJSON *labels_1_to_n(cJSON *cfg, int n)
{
	cJSON *l =
	    cJSON_AddArrayToObject(cJSON_GetObjectItem(cfg, "data"), "labels");
	for (int i = 0; i < n; i++) {
		char s[16];
		snprintf(s, sizeof(s), "%d", i + 1);
		cJSON_AddItemToArray(l, cJSON_CreateString(s));
	}
	return l;
}

static void speedup_chart(cJSON *sec, const struct run *r)
{
	cJSON *cfg = rp_chart(sec, "speedup", "Speedup per evaluation", "bar");
	labels_1_to_n(cfg, r->n);
	cJSON *ci = rp_dataset(cfg, "95% interval", NULL);
	cJSON_AddNumberToObject(ci, "barPercentage", 0.3);
	cJSON *sp = rp_dataset(cfg, "speedup (ok)", "line");
	cJSON_AddBoolToObject(sp, "showLine", false);
	cJSON_AddNumberToObject(sp, "pointRadius", 4);
	cJSON *best = rp_dataset(cfg, "best so far", "line");
	cJSON_AddBoolToObject(best, "stepped", true);
	cJSON_AddNumberToObject(best, "pointRadius", 0);
	cJSON *bad = rp_dataset(cfg, "failed (no speedup)", "line");
	cJSON_AddBoolToObject(bad, "showLine", false);
	cJSON_AddStringToObject(bad, "pointStyle", "crossRot");
	cJSON_AddNumberToObject(bad, "pointRadius", 6);
	double top = NAN;
	for (int i = 0; i < r->n; i++) {
		const cJSON *e = eval_of(r->ev[i]);
		double s = speedup_of(r->ev[i]);
		if (isfinite(s) && !(s <= top))
			top = s;
		rp_range(ci, isfinite(s) ? ci_at(e, 0) : NAN,
			 isfinite(s) ? ci_at(e, 1) : NAN);
		rp_value(sp, s);
		rp_value(best, top);
		rp_value(bad, isfinite(s) ? NAN : 0);
	}
	rp_axis(cfg, "x", "evaluation, in the order recorded", NULL);
	cJSON *y =
	    rp_axis(cfg, "y", "speedup over the reference (x)", "linear");
	cJSON_AddBoolToObject(y, "beginAtZero", true);
	rp_chart_note(cfg, sec,
		      "Each point is a candidate that passed: the median of "
		      "the per-pair ratios reference/candidate, with the 95% "
		      "interval of that median as a bar. The line is the "
		      "fastest so far; crosses on the axis are candidates "
		      "that did not pass.");
}

static void status_chart(cJSON *sec, const struct run *r)
{
	cJSON *cfg = rp_chart(sec, "statuses", "Statuses over time", "line");
	labels_1_to_n(cfg, r->n);
	/* One dataset per verdict, in the order first seen. */
	cJSON *names = cJSON_CreateArray();
	for (int i = 0; i < r->n; i++) {
		char *v = verdict(r->ev[i]);
		bool seen = false;
		const cJSON *s;
		cJSON_ArrayForEach(s, names) seen |= !strcmp(s->valuestring, v);
		if (!seen)
			cJSON_AddItemToArray(names, cJSON_CreateString(v));
		free(v);
	}
	const cJSON *name;
	cJSON_ArrayForEach(name, names)
	{
		cJSON *ds = rp_dataset(cfg, name->valuestring, NULL);
		cJSON_AddBoolToObject(ds, "stepped", true);
		cJSON_AddNumberToObject(ds, "pointRadius", 2);
		int count = 0;
		for (int i = 0; i < r->n; i++) {
			char *v = verdict(r->ev[i]);
			count += !strcmp(v, name->valuestring);
			free(v);
			rp_value(ds, count);
		}
	}
	cJSON_Delete(names);
	rp_axis(cfg, "x", "evaluation, in the order recorded", NULL);
	cJSON *y = rp_axis(cfg, "y", "evaluations so far", "linear");
	cJSON_AddBoolToObject(y, "beginAtZero", true);
	rp_chart_note(cfg, sec,
		      "How many evaluations had each verdict (status, or "
		      "status/check) after each evaluation.");
}

/* The lineage of the best candidate: it and every candidate it was made
 * from, through all parents, as points (x: the candidate's number in the
 * run, y: its speedup, 0 when it did not pass) and edges from each
 * parent to its child. */
static void lineage_chart(cJSON *sec, const struct run *r, const cJSON *best)
{
	int n = cJSON_GetArraySize(r->cands);
	const cJSON **q = kf_xcalloc((size_t)n + 1, sizeof(*q));
	int nq = 0;
	q[nq++] = best;
	for (int i = 0; i < nq; i++) {
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(q[i], "parents"))
		{
			const cJSON *c = by_id(r, p->valuedouble);
			bool seen = false;
			for (int k = 0; k < nq && c; k++)
				seen |= q[k] == c;
			if (c && !seen && nq < n)
				q[nq++] = c;
		}
	}
	cJSON *cfg = rp_chart(sec, "lineage", "Lineage of the best candidate",
			      "scatter");
	cJSON *ok = rp_dataset(cfg, "ancestor (ok)", NULL);
	cJSON *bad = rp_dataset(cfg, "ancestor (did not pass, at 0)", NULL);
	cJSON_AddStringToObject(bad, "pointStyle", "crossRot");
	cJSON_AddNumberToObject(bad, "pointRadius", 6);
	cJSON *b = rp_dataset(cfg, "best", NULL);
	cJSON_AddStringToObject(b, "pointStyle", "star");
	cJSON_AddNumberToObject(b, "pointRadius", 10);
	int edges = 0;
	struct kf_strbuf chain = KF_STRBUF_INIT;
	for (int i = 0; i < nq; i++) {
		double s = speedup_of(q[i]);
		double x = kf_json_num(q[i], "seq", 0);
		rp_point(i == 0	       ? b
			 : isfinite(s) ? ok
				       : bad,
			 x, isfinite(s) ? s : 0);
		kf_strbuf_addf(&chain, "%s#%g", i ? ", " : "", x);
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(q[i], "parents"))
		{
			const cJSON *c = by_id(r, p->valuedouble);
			if (!c || edges >= MAX_EDGES)
				continue;
			double ps = speedup_of(c);
			cJSON *e = rp_dataset(cfg, "made from", NULL);
			cJSON_AddBoolToObject(e, "showLine", true);
			cJSON_AddNumberToObject(e, "pointRadius", 0);
			cJSON_AddBoolToObject(e, "kfHideLegend", edges > 0);
			cJSON_AddBoolToObject(e, "kfEdge", true);
			rp_point(e, kf_json_num(c, "seq", 0),
				 isfinite(ps) ? ps : 0);
			rp_point(e, x, isfinite(s) ? s : 0);
			edges++;
		}
	}
	rp_axis(cfg, "x", "candidate number in the run (seq)", "linear");
	cJSON *y = rp_axis(cfg, "y", "speedup (x)", "linear");
	cJSON_AddBoolToObject(y, "beginAtZero", true);
	char *note = kf_xasprintf(
	    "The best candidate (#%g) and the %d candidates it was made "
	    "from, through every parent (%s); lines join a parent to the "
	    "candidate made from it.%s",
	    kf_json_num(best, "seq", 0), nq - 1, kf_strbuf_str(&chain),
	    nq == 1 ? " It was made from no earlier candidate of the run."
		    : "");
	rp_chart_note(cfg, sec, note);
	free(note);
	kf_strbuf_release(&chain);
	free(q);
}

/* The landscape over two parameters: a bubble per evaluation at its two
 * values, its area growing with its speedup (failed ones in a dataset of
 * their own). */
static void landscape_2d(cJSON *sec, const struct run *r, const char *a,
			 const char *b)
{
	char *title = kf_xasprintf("Parameter landscape: %s and %s", a, b);
	cJSON *cfg = rp_chart(sec, "landscape-2d", title, "bubble");
	free(title);
	cJSON *ok = rp_dataset(cfg, "speedup (ok; area grows with it)", NULL);
	cJSON *bad = rp_dataset(cfg, "did not pass", NULL);
	cJSON_AddStringToObject(bad, "pointStyle", "crossRot");
	double top = 0;
	for (int i = 0; i < r->n; i++)
		if (speedup_of(r->ev[i]) > top)
			top = speedup_of(r->ev[i]);
	for (int i = 0; i < r->n; i++) {
		const cJSON *p = cJSON_GetObjectItem(r->ev[i], "params");
		double x = param_num(cJSON_GetObjectItem(p, a));
		double y = param_num(cJSON_GetObjectItem(p, b));
		double s = speedup_of(r->ev[i]);
		if (!isfinite(x) || !isfinite(y))
			continue;
		cJSON *ds = isfinite(s) ? ok : bad;
		rp_point(ds, x, y);
		cJSON *pt = cJSON_GetArrayItem(
		    rp_data(ds), cJSON_GetArraySize(rp_data(ds)) - 1);
		cJSON_AddNumberToObject(
		    pt, "r", isfinite(s) && top > 0 ? 4 + 16 * s / top : 6);
		if (isfinite(s))
			cJSON_AddNumberToObject(pt, "speedup", s);
	}
	rp_axis(cfg, "x", a, "linear");
	rp_axis(cfg, "y", b, "linear");
	rp_chart_note(cfg, sec,
		      "Each evaluation at its values of the two parameters; "
		      "a bubble's radius is proportional to its speedup "
		      "(the fastest is the largest).");
}

/* The parameter landscape: per KF_PARAM parameter with numeric values,
 * each evaluation's speedup against the value it had. */
static void landscape_charts(cJSON *sec, const struct run *r)
{
	const char *names[MAX_PARAMS];
	int np = 0, skipped = 0;
	for (int i = 0; i < r->n; i++) {
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(r->ev[i], "params"))
		{
			bool seen = false;
			for (int k = 0; k < np; k++)
				seen |= !strcmp(names[k], p->string);
			if (seen)
				continue;
			if (np < MAX_PARAMS && isfinite(param_num(p)))
				names[np++] = p->string;
			else
				skipped++;
		}
	}
	if (!np) {
		rp_text(sec, "Parameter landscape: no evaluation has numeric "
			     "parameters (the landscape is drawn for the "
			     "tuner's runs, over KF_PARAM).");
		return;
	}
	for (int k = 0; k < np; k++) {
		char *id = kf_xasprintf("landscape-%d", k);
		char *title = kf_xasprintf("Parameter landscape: %s", names[k]);
		cJSON *cfg = rp_chart(sec, id, title, "scatter");
		free(id);
		free(title);
		cJSON *ok = rp_dataset(cfg, "speedup (ok)", NULL);
		cJSON_AddNumberToObject(ok, "pointRadius", 5);
		cJSON *bad = rp_dataset(cfg, "did not pass (at 0)", NULL);
		cJSON_AddStringToObject(bad, "pointStyle", "crossRot");
		cJSON_AddNumberToObject(bad, "pointRadius", 6);
		for (int i = 0; i < r->n; i++) {
			const cJSON *v = cJSON_GetObjectItem(
			    cJSON_GetObjectItem(r->ev[i], "params"), names[k]);
			if (!isfinite(param_num(v)))
				continue;
			double s = speedup_of(r->ev[i]);
			rp_point(isfinite(s) ? ok : bad, param_num(v),
				 isfinite(s) ? s : 0);
		}
		rp_axis(cfg, "x", names[k], "linear");
		cJSON *y = rp_axis(cfg, "y", "speedup (x)", "linear");
		cJSON_AddBoolToObject(y, "beginAtZero", true);
		rp_chart_note(cfg, sec,
			      "Each evaluation's speedup against the value "
			      "this parameter had in it (the others vary "
			      "too).");
	}
	if (np >= 2)
		landscape_2d(sec, r, names[0], names[1]);
	if (skipped)
		rp_text(sec,
			"Parameter landscape: %d further parameters "
			"(not numbers, or past the first %d) are not "
			"drawn.",
			skipped, MAX_PARAMS);
}

static const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

static void run_section(cJSON *model, const struct run *r, const cJSON *best)
{
	const cJSON *run = r->run;
	cJSON *sec = rp_section(model, "run", "Run");
	static const char *const cols[] = {"field", "value", NULL};
	cJSON *rows = rp_table(sec, cols);
	rp_kv(rows, "run", rp_num(kf_json_num(run, "id", NAN)));
	rp_kv(rows, "task", kf_json_str(run, "task_id"));
	rp_kv(rows, "task directory", kf_json_str(run, "task"));
	rp_kv(rows, "backend", kf_json_str(run, "backend"));
	rp_kv(rows, "policy", kf_json_str(run, "policy"));
	rp_kv(rows, "state", kf_json_str(run, "state"));
	rp_kv(rows, "note", kf_json_str(run, "note"));
	char *ev = kf_xasprintf("%d of a budget of %g (%g candidates)", r->n,
				kf_json_num(run, "budget", 0),
				kf_json_num(run, "candidates", 0));
	rp_kv(rows, "evaluated", ev);
	free(ev);
	char *b =
	    best ? kf_xasprintf("%.4gx (candidate #%g, id %g)",
				speedup_of(best), kf_json_num(best, "seq", 0),
				kf_json_num(best, "id", 0))
		 : kf_xstrdup("no candidate passed");
	rp_kv(rows, "best", b);
	free(b);
	rp_kv(rows, "started", kf_json_str(run, "started_at"));
	rp_kv(rows, "finished", kf_json_str(run, "finished_at"));
}

static void candidate_section(cJSON *model, const cJSON *c)
{
	char *id = kf_xasprintf("candidate-%g", kf_json_num(c, "id", 0));
	char *title =
	    kf_xasprintf("Candidate #%g (id %g)", kf_json_num(c, "seq", 0),
			 kf_json_num(c, "id", 0));
	cJSON *sec = rp_section(model, id, title);
	free(title);
	const cJSON *e = eval_of(c);
	const cJSON *res = cJSON_GetObjectItem(e, "result");
	static const char *const cols[] = {"field", "value", NULL};
	cJSON *rows = rp_table(sec, cols);
	char *v = verdict(c);
	rp_kv(rows, "verdict", v);
	free(v);
	char *sp = kf_xasprintf("%.4gx [%.4g, %.4g]", speedup_of(c),
				ci_at(e, 0), ci_at(e, 1));
	rp_kv(rows, "speedup [95% interval]", sp);
	free(sp);
	rp_kv(rows, "reference median (ms)",
	      rp_num(kf_json_num(e, "reference_ms", NAN)));
	rp_kv(rows, "candidate median (ms)",
	      rp_num(kf_json_num(e, "candidate_ms", NAN)));
	rp_kv(rows, "policy", kf_json_str(c, "policy"));
	rp_kv(rows, "origin", kf_json_str(c, "origin"));
	const cJSON *params = cJSON_GetObjectItem(c, "params");
	char *ps = cJSON_IsObject(params) ? kf_json_print(params) : NULL;
	rp_kv(rows, "parameters", ps);
	free(ps);
	rp_candidate_charts(sec, id, cJSON_GetObjectItem(res, "timing"),
			    cJSON_GetObjectItem(res, "roofline"));
	free(id);
}

static int by_speedup(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a,
		    *y = *(const cJSON *const *)b;
	double sx = speedup_of(x), sy = speedup_of(y);
	if (sx != sy)
		return (sx < sy) - (sx > sy);
	double qx = kf_json_num(x, "seq", 0), qy = kf_json_num(y, "seq", 0);
	return (qx > qy) - (qx < qy);
}

static void environment_section(cJSON *model, struct kf_store *st,
				const struct run *r, const cJSON *best)
{
	cJSON *sec = rp_section(model, "environment", "Environment and cost");
	const cJSON *res = NULL;
	if (best)
		res = cJSON_GetObjectItem(eval_of(best), "result");
	for (int i = 0; i < r->n &&
			!cJSON_IsObject(cJSON_GetObjectItem(
			    cJSON_GetObjectItem(res, "environment"), "device"));
	     i++)
		res = cJSON_GetObjectItem(eval_of(r->ev[i]), "result");
	if (res)
		rp_text(sec, "From the result of candidate #%g.",
			kf_json_num(best ? best : r->ev[0], "seq", 0));
	cJSON *rows = NULL;
	rp_environment(sec, res, &rows);
	const cJSON *cfg = cJSON_GetObjectItem(r->run, "config");
	rp_kv(rows, "policy seed", kf_json_str(cfg, "seed"));
	double secs = 0, compile = 0;
	int with_compile = 0;
	for (int i = 0; i < r->n; i++) {
		const cJSON *e = eval_of(r->ev[i]);
		secs += kf_json_num(e, "seconds", 0);
		double c = kf_json_num(e, "compile_ms", NAN);
		if (isfinite(c)) {
			compile += c / 1e3;
			with_compile++;
		}
	}
	char *s = r->n ? kf_xasprintf("%.1f s over %d evaluations", secs, r->n)
		       : NULL;
	rp_kv(rows, "evaluation seconds (wall, sum)", s);
	const char *backend = kf_json_str(r->run, "backend");
	if (backend && !strcmp(backend, "cuda"))
		rp_kv(rows, "GPU-seconds (the evaluations' wall time)", s);
	else
		rp_kv(rows, "GPU-seconds",
		      RP_NOT_RECORDED " (host backend: no GPU used)");
	free(s);
	s = with_compile
		? kf_xasprintf("%.2f s over %d compiles", compile, with_compile)
		: NULL;
	rp_kv(rows, "compile seconds (sum)", s);
	free(s);
	cJSON *calls = NULL;
	struct kf_err err = KF_ERR_INIT;
	long pt = 0, ct = 0;
	int n = 0, unknown = 0;
	if (!kf_store_llm_call_list(st, (int64_t)kf_json_num(r->run, "id", 0),
				    &calls, &err)) {
		const cJSON *c;
		cJSON_ArrayForEach(c, calls)
		{
			double p = kf_json_num(c, "prompt_tokens", -1);
			double q = kf_json_num(c, "completion_tokens", -1);
			n++;
			if (p < 0 || q < 0) {
				unknown++;
				continue;
			}
			pt += (long)p;
			ct += (long)q;
		}
	}
	cJSON_Delete(calls);
	s = n ? kf_xasprintf("%ld prompt + %ld completion over %d model "
			     "calls%s",
			     pt, ct, n,
			     unknown ? " (some calls reported no count)" : "")
	      : NULL;
	rp_kv(rows, "tokens", s ? s : RP_NOT_RECORDED " (no model calls)");
	free(s);
}

int kf_report_run_model(struct kf_store *st, int64_t id, int top, cJSON **out,
			struct kf_err *err)
{
	struct run r;
	*out = NULL;
	if (run_read(st, id, &r, err))
		return err->code;
	char *title = kf_xasprintf("kforge report: run %lld, %s", (long long)id,
				   str_or(kf_json_str(r.run, "task_id"), "?"));
	cJSON *model = rp_model("run", title);
	free(title);
	const cJSON *best = best_of(&r);
	run_section(model, &r, best);
	cJSON *sec = rp_section(model, "search", "Search");
	if (r.n) {
		speedup_chart(sec, &r);
		status_chart(sec, &r);
	} else {
		rp_text(sec, "No candidate of this run was evaluated yet.");
	}
	if (best)
		lineage_chart(sec, &r, best);
	else
		rp_text(sec, "Lineage: no candidate passed.");
	landscape_charts(sec, &r);
	const cJSON **ok = kf_xcalloc((size_t)r.n + 1, sizeof(*ok));
	int nok = 0;
	for (int i = 0; i < r.n; i++)
		if (isfinite(speedup_of(r.ev[i])))
			ok[nok++] = r.ev[i];
	qsort(ok, (size_t)nok, sizeof(*ok), by_speedup);
	for (int i = 0; i < nok && i < top; i++)
		candidate_section(model, ok[i]);
	if (!nok)
		rp_text(sec, "Candidates: none passed, so none has timing.");
	free(ok);
	environment_section(model, st, &r, best);
	rp_prune(model);
	run_release(&r);
	*out = model;
	return 0;
}

static const char *const csv_cols[] = {
    "run",	    "evaluation",   "seq",
    "candidate",    "parents",	    "policy",
    "origin",	    "params",	    "status",
    "check",	    "reason",	    "speedup",
    "speedup_lo",   "speedup_hi",   "best_so_far",
    "candidate_ms", "reference_ms", "compile_ms",
    "seconds",	    "evaluated_at", NULL};

int kf_report_run_csv(struct kf_store *st, int64_t id, char **out,
		      struct kf_err *err)
{
	struct run r;
	*out = NULL;
	if (run_read(st, id, &r, err))
		return err->code;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	for (int i = 0; csv_cols[i]; i++)
		rp_csv_str(&sb, csv_cols[i], i == 0);
	rp_csv_end(&sb);
	double top = NAN;
	for (int i = 0; i < r.n; i++) {
		const cJSON *c = r.ev[i], *e = eval_of(c);
		double s = speedup_of(c);
		if (isfinite(s) && !(s <= top))
			top = s;
		rp_csv_num(&sb, (double)id, true);
		rp_csv_num(&sb, i + 1, false);
		rp_csv_num(&sb, kf_json_num(c, "seq", NAN), false);
		rp_csv_num(&sb, kf_json_num(c, "id", NAN), false);
		struct kf_strbuf ps = KF_STRBUF_INIT;
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(c, "parents"))
		{
			kf_strbuf_addf(&ps, "%s%g", ps.len ? " " : "",
				       p->valuedouble);
		}
		rp_csv_str(&sb, kf_strbuf_str(&ps), false);
		kf_strbuf_release(&ps);
		rp_csv_str(&sb, kf_json_str(c, "policy"), false);
		rp_csv_str(&sb, kf_json_str(c, "origin"), false);
		const cJSON *params = cJSON_GetObjectItem(c, "params");
		char *pj =
		    cJSON_IsObject(params) ? kf_json_print(params) : NULL;
		rp_csv_str(&sb, pj, false);
		free(pj);
		rp_csv_str(&sb, kf_json_str(e, "status"), false);
		rp_csv_str(&sb, kf_json_str(e, "check"), false);
		rp_csv_str(&sb, kf_json_str(e, "reason"), false);
		rp_csv_num(&sb, kf_json_num(e, "speedup", NAN), false);
		rp_csv_num(&sb, ci_at(e, 0), false);
		rp_csv_num(&sb, ci_at(e, 1), false);
		rp_csv_num(&sb, top, false);
		rp_csv_num(&sb, kf_json_num(e, "candidate_ms", NAN), false);
		rp_csv_num(&sb, kf_json_num(e, "reference_ms", NAN), false);
		rp_csv_num(&sb, kf_json_num(e, "compile_ms", NAN), false);
		rp_csv_num(&sb, kf_json_num(e, "seconds", NAN), false);
		rp_csv_str(&sb, kf_json_str(e, "created_at"), false);
		rp_csv_end(&sb);
	}
	run_release(&r);
	*out = kf_strbuf_detach(&sb);
	return 0;
}
