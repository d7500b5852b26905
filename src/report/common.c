/*
 * common.c: the model of a report (sections, tables, Chart.js
 * configurations), the charts of one candidate, the environment manifest
 * and CSV cells, shared by the run's and the bench's reports.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

cJSON *rp_model(const char *kind, const char *title)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "kind", kind);
	cJSON_AddStringToObject(m, "title", title);
	cJSON_AddStringToObject(m, "kforge", KF_VERSION);
	cJSON_AddArrayToObject(m, "sections");
	return m;
}

cJSON *rp_section(cJSON *model, const char *id, const char *title)
{
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "id", id);
	cJSON_AddStringToObject(s, "title", title);
	cJSON_AddArrayToObject(s, "text");
	cJSON_AddArrayToObject(s, "tables");
	cJSON_AddArrayToObject(s, "charts");
	cJSON_AddItemToArray(cJSON_GetObjectItem(model, "sections"), s);
	return s;
}

void rp_text(cJSON *sec, const char *fmt, ...)
{
	va_list ap;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	va_start(ap, fmt);
	kf_strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(cJSON_GetObjectItem(sec, "text"),
			     cJSON_CreateString(kf_strbuf_str(&sb)));
	kf_strbuf_release(&sb);
}

cJSON *rp_table(cJSON *sec, const char *const *columns)
{
	cJSON *t = cJSON_CreateObject();
	cJSON *cols = cJSON_AddArrayToObject(t, "columns");
	for (int i = 0; columns[i]; i++)
		cJSON_AddItemToArray(cols, cJSON_CreateString(columns[i]));
	cJSON *rows = cJSON_AddArrayToObject(t, "rows");
	cJSON_AddItemToArray(cJSON_GetObjectItem(sec, "tables"), t);
	return rows;
}

void rp_row(cJSON *rows, int n, ...)
{
	va_list ap;
	cJSON *r = cJSON_CreateArray();
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		const char *s = va_arg(ap, const char *);
		cJSON_AddItemToArray(r, cJSON_CreateString(s ? s : ""));
	}
	va_end(ap);
	cJSON_AddItemToArray(rows, r);
}

void rp_kv(cJSON *rows, const char *key, const char *value)
{
	rp_row(rows, 2, key, value && *value ? value : RP_NOT_RECORDED);
}

cJSON *rp_chart(cJSON *sec, const char *id, const char *title, const char *type)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "id", id);
	cJSON_AddStringToObject(c, "title", title);
	cJSON *cfg = cJSON_AddObjectToObject(c, "config");
	cJSON_AddStringToObject(cfg, "type", type);
	cJSON *data = cJSON_AddObjectToObject(cfg, "data");
	cJSON_AddArrayToObject(data, "datasets");
	cJSON *opts = cJSON_AddObjectToObject(cfg, "options");
	cJSON_AddObjectToObject(opts, "scales");
	cJSON_AddObjectToObject(opts, "plugins");
	cJSON_AddItemToArray(cJSON_GetObjectItem(sec, "charts"), c);
	return cfg;
}

void rp_chart_note(cJSON *cfg, cJSON *sec, const char *note)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(sec, "charts"))
	{
		if (cJSON_GetObjectItem(c, "config") == cfg) {
			cJSON_AddStringToObject((cJSON *)c, "note", note);
			return;
		}
	}
}

cJSON *rp_axis(cJSON *cfg, const char *axis, const char *title,
	       const char *type)
{
	cJSON *scales =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "options"), "scales");
	cJSON *a = cJSON_AddObjectToObject(scales, axis);
	if (type)
		cJSON_AddStringToObject(a, "type", type);
	cJSON *t = cJSON_AddObjectToObject(a, "title");
	cJSON_AddBoolToObject(t, "display", true);
	cJSON_AddStringToObject(t, "text", title);
	return a;
}

cJSON *rp_dataset(cJSON *cfg, const char *label, const char *type)
{
	cJSON *ds = cJSON_CreateObject();
	cJSON_AddStringToObject(ds, "label", label);
	if (type)
		cJSON_AddStringToObject(ds, "type", type);
	cJSON_AddArrayToObject(ds, "data");
	cJSON_AddItemToArray(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "data"), "datasets"),
	    ds);
	return ds;
}

cJSON *rp_data(cJSON *ds)
{
	return cJSON_GetObjectItem(ds, "data");
}

static cJSON *num_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

void rp_point(cJSON *ds, double x, double y)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddItemToObject(p, "x", num_or_null(x));
	cJSON_AddItemToObject(p, "y", num_or_null(y));
	cJSON_AddItemToArray(rp_data(ds), p);
}

void rp_value(cJSON *ds, double v)
{
	cJSON_AddItemToArray(rp_data(ds), num_or_null(v));
}

void rp_range(cJSON *ds, double lo, double hi)
{
	if (!isfinite(lo) || !isfinite(hi)) {
		cJSON_AddItemToArray(rp_data(ds), cJSON_CreateNull());
		return;
	}
	cJSON *r = cJSON_CreateArray();
	cJSON_AddItemToArray(r, cJSON_CreateNumber(lo));
	cJSON_AddItemToArray(r, cJSON_CreateNumber(hi));
	cJSON_AddItemToArray(rp_data(ds), r);
}

/* Whether one value of a dataset's data is drawn: a number, a range, or
 * a point whose y is a number. */
static bool has_value(const cJSON *ds)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, cJSON_GetObjectItem(ds, "data"))
	{
		if (cJSON_IsNumber(v) || cJSON_IsArray(v))
			return true;
		if (cJSON_IsObject(v) &&
		    cJSON_IsNumber(cJSON_GetObjectItem(v, "y")))
			return true;
	}
	return false;
}

void rp_prune(cJSON *model)
{
	cJSON *sec;
	cJSON_ArrayForEach(sec, cJSON_GetObjectItem(model, "sections"))
	{
		cJSON *charts = cJSON_GetObjectItem(sec, "charts");
		for (int i = cJSON_GetArraySize(charts) - 1; i >= 0; i--) {
			cJSON *c = cJSON_GetArrayItem(charts, i);
			cJSON *ds = cJSON_GetObjectItem(
			    cJSON_GetObjectItem(
				cJSON_GetObjectItem(c, "config"), "data"),
			    "datasets");
			for (int k = cJSON_GetArraySize(ds) - 1; k >= 0; k--)
				if (!has_value(cJSON_GetArrayItem(ds, k)))
					cJSON_DeleteItemFromArray(ds, k);
			if (cJSON_GetArraySize(ds) == 0) {
				rp_text(sec,
					"%s: nothing to draw (no value "
					"recorded).",
					kf_json_str(c, "title"));
				cJSON_DeleteItemFromArray(charts, i);
			}
		}
	}
}

const char *rp_num(double v)
{
	static char ring[8][32];
	static int at;
	if (!isfinite(v))
		return NULL;
	char *s = ring[at++ % 8];
	snprintf(s, sizeof(ring[0]), "%.4g", v);
	return s;
}

/* The median, interval and extremes of a timing summary. */
struct summary {
	double median, lo, hi, min, max, n;
};

static bool summary_of(const cJSON *s, struct summary *out)
{
	const cJSON *ci = cJSON_GetObjectItem(s, "ci95");
	out->median = kf_json_num(s, "median", NAN);
	out->min = kf_json_num(s, "min", NAN);
	out->max = kf_json_num(s, "max", NAN);
	out->n = kf_json_num(s, "n", NAN);
	out->lo = out->hi = NAN;
	if (cJSON_GetArraySize(ci) == 2 &&
	    cJSON_IsNumber(cJSON_GetArrayItem(ci, 0)) &&
	    cJSON_IsNumber(cJSON_GetArrayItem(ci, 1))) {
		out->lo = cJSON_GetArrayItem(ci, 0)->valuedouble;
		out->hi = cJSON_GetArrayItem(ci, 1)->valuedouble;
	}
	return isfinite(out->median);
}

/* The timing chart: per side, the range of its calls, the 95 % interval
 * of its median and the median. */
static void timing_chart(cJSON *sec, const char *prefix, const cJSON *timing)
{
	struct summary s[2];
	const char *side[2] = {"reference", "candidate"};
	if (!summary_of(cJSON_GetObjectItem(timing, side[0]), &s[0]) ||
	    !summary_of(cJSON_GetObjectItem(timing, side[1]), &s[1])) {
		rp_text(sec, "Timing: " RP_NOT_RECORDED
			     " (the evaluation was not timed).");
		return;
	}
	char *id = kf_xasprintf("%s-timing", prefix);
	cJSON *cfg = rp_chart(sec, id, "Time per call, both sides (ms)", "bar");
	free(id);
	cJSON *labels =
	    cJSON_AddArrayToObject(cJSON_GetObjectItem(cfg, "data"), "labels");
	for (int i = 0; i < 2; i++)
		cJSON_AddItemToArray(labels, cJSON_CreateString(side[i]));
	cJSON *range = rp_dataset(cfg, "min to max", NULL);
	cJSON *ci = rp_dataset(cfg, "95% interval of the median", NULL);
	cJSON *med = rp_dataset(cfg, "median", "line");
	cJSON_AddBoolToObject(med, "showLine", false);
	cJSON_AddNumberToObject(med, "pointRadius", 6);
	for (int i = 0; i < 2; i++) {
		rp_range(range, s[i].min, s[i].max);
		rp_range(ci, s[i].lo, s[i].hi);
		rp_value(med, s[i].median);
	}
	cJSON_AddBoolToObject(range, "grouped", false);
	cJSON_AddBoolToObject(ci, "grouped", false);
	cJSON_AddNumberToObject(range, "barPercentage", 0.15);
	cJSON_AddNumberToObject(ci, "barPercentage", 0.5);
	rp_axis(cfg, "x", "side", NULL);
	rp_axis(cfg, "y", "ms per call", "logarithmic");
	const char *p = kf_json_str(timing, "protocol");
	const cJSON *smp = cJSON_GetObjectItem(timing, "samples");
	char *note = kf_xasprintf(
	    "%s protocol, %s calls per side: each side's range, the 95%% "
	    "interval of its median and the median.%s",
	    p ? p : "kforge", rp_num(s[1].n) ? rp_num(s[1].n) : "?",
	    smp ? "" : " Per-call samples: " RP_NOT_RECORDED ".");
	rp_chart_note(cfg, sec, note);
	free(note);
	if (!smp)
		return;
	/* The per-call times themselves, in the order of the pairs. */
	id = kf_xasprintf("%s-samples", prefix);
	cfg = rp_chart(sec, id, "Time of each call, both sides (ms)", "scatter");
	free(id);
	const cJSON *pair = cJSON_GetObjectItem(smp, "pair");
	const char *keys[2] = {"reference_ms", "candidate_ms"};
	for (int i = 0; i < 2; i++) {
		cJSON *ds = rp_dataset(cfg, side[i], NULL);
		const cJSON *ys = cJSON_GetObjectItem(smp, keys[i]);
		for (int k = 0; k < cJSON_GetArraySize(ys); k++) {
			const cJSON *x = cJSON_GetArrayItem(pair, k);
			rp_point(ds, cJSON_IsNumber(x) ? x->valuedouble : k,
				 cJSON_GetArrayItem(ys, k)->valuedouble);
		}
		cJSON_AddNumberToObject(ds, "pointRadius", 2);
	}
	rp_axis(cfg, "x", "timed pair", NULL);
	rp_axis(cfg, "y", "ms per call", "logarithmic");
	note = kf_xasprintf(
	    "Each call's time as the judge took it (the candidate's with any "
	    "charge for time outside its report): %d of the %s pairs shown, "
	    "evenly spaced.",
	    cJSON_GetArraySize(pair),
	    rp_num(kf_json_num(smp, "n", NAN)) ? rp_num(kf_json_num(smp, "n",
								    NAN))
					       : "?");
	rp_chart_note(cfg, sec, note);
	free(note);
}

/* Adds the roof (the lower of the two) over intensities lo to hi. */
static void roof(cJSON *ds, double pf, double pb, double lo, double hi)
{
	double ridge = pf / pb;
	rp_point(ds, lo, fmin(pf, lo * pb));
	if (ridge > lo && ridge < hi)
		rp_point(ds, ridge, pf);
	rp_point(ds, hi, fmin(pf, hi * pb));
}

static void roofline_chart(cJSON *sec, const char *prefix, const cJSON *timing,
			   const cJSON *rl)
{
	double flops = kf_json_num(rl, "flops", 0);
	double bytes = kf_json_num(rl, "bytes", 0);
	double pf = kf_json_num(rl, "peak_flops_per_s", 0);
	double pb = kf_json_num(rl, "peak_bytes_per_s", 0);
	double cand_ms = kf_json_num(cJSON_GetObjectItem(timing, "candidate"),
				     "median", NAN);
	double ref_ms = kf_json_num(cJSON_GetObjectItem(timing, "reference"),
				    "median", NAN);
	const char *why = kf_json_str(rl, "why");
	if (!cJSON_IsObject(rl)) {
		rp_text(sec, "Roofline: " RP_NOT_RECORDED ".");
		return;
	}
	if (!(flops > 0 && bytes > 0 && pf > 0 && pb > 0 && cand_ms > 0 &&
	      ref_ms > 0)) {
		rp_text(sec, "Roofline: not drawn: %s.",
			why ? why
			    : "the task's FLOP or byte counts, or the "
			      "device's peaks, are " RP_NOT_RECORDED);
		return;
	}
	double ai = flops / bytes, ridge = pf / pb;
	double lo = fmin(ai, ridge) / 10, hi = fmax(ai, ridge) * 10;
	char *id = kf_xasprintf("%s-roofline", prefix);
	cJSON *cfg = rp_chart(sec, id, "Roofline", "scatter");
	free(id);
	char *label = kf_xasprintf("roof (%s peak, memory peak)",
				   kf_json_str(rl, "compute_peak")
				       ? kf_json_str(rl, "compute_peak")
				       : "compute");
	cJSON *r = rp_dataset(cfg, label, NULL);
	free(label);
	cJSON_AddBoolToObject(r, "showLine", true);
	cJSON_AddNumberToObject(r, "pointRadius", 0);
	roof(r, pf, pb, lo, hi);
	cJSON *ref = rp_dataset(cfg, "reference", NULL);
	rp_point(ref, ai, flops / (ref_ms / 1e3));
	cJSON_AddNumberToObject(ref, "pointRadius", 7);
	cJSON *cand = rp_dataset(cfg, "candidate", NULL);
	rp_point(cand, ai, flops / (cand_ms / 1e3));
	cJSON_AddNumberToObject(cand, "pointRadius", 7);
	cJSON_AddStringToObject(cand, "pointStyle", "rectRot");
	rp_axis(cfg, "x", "arithmetic intensity (FLOP/byte)", "logarithmic");
	rp_axis(cfg, "y", "FLOP/s", "logarithmic");
	char *note = kf_xasprintf(
	    "Peaks measured on the device: %s FLOP/s, %s B/s; bound: %s; "
	    "candidate at %s of the roof, reference at %s.",
	    rp_num(pf), rp_num(pb),
	    kf_json_str(rl, "bound") ? kf_json_str(rl, "bound") : "?",
	    rp_num(kf_json_num(rl, "fraction", NAN))
		? rp_num(kf_json_num(rl, "fraction", NAN))
		: "?",
	    rp_num(kf_json_num(rl, "reference_fraction", NAN))
		? rp_num(kf_json_num(rl, "reference_fraction", NAN))
		: "?");
	rp_chart_note(cfg, sec, note);
	free(note);
}

void rp_candidate_charts(cJSON *sec, const char *prefix, const cJSON *timing,
			 const cJSON *roofline)
{
	timing_chart(sec, prefix, timing);
	if (cJSON_IsObject(timing))
		roofline_chart(sec, prefix, timing, roofline);
	rp_text(sec, "Profile advice: " RP_NOT_RECORDED
		     " (no profile was taken for this evaluation).");
}

/* "key=value" pairs of the device's figures whose names hold any of
 * the words (NULL-terminated), joined by ", "; caller frees. */
static char *device_fields(const cJSON *dev, const char *const *words)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	const cJSON *f;
	cJSON_ArrayForEach(f, dev)
	{
		bool hit = false;
		for (int i = 0; words[i] && !hit; i++)
			hit = strstr(f->string, words[i]) != NULL;
		if (!hit)
			continue;
		if (cJSON_IsString(f))
			kf_strbuf_addf(&sb, "%s%s %s", sb.len ? ", " : "",
				       f->string, f->valuestring);
		else if (cJSON_IsNumber(f))
			kf_strbuf_addf(&sb, "%s%s %g", sb.len ? ", " : "",
				       f->string, f->valuedouble);
	}
	return kf_strbuf_detach(&sb);
}

void rp_environment(cJSON *sec, const cJSON *result, cJSON **rows_out)
{
	static const char *const cols[] = {"field", "value", NULL};
	cJSON *rows = rp_table(sec, cols);
	const cJSON *env = cJSON_GetObjectItem(result, "environment");
	const cJSON *dev = cJSON_GetObjectItem(env, "device");
	char *name = NULL;
	if (kf_json_str(dev, "name"))
		name = kf_xasprintf(
		    "%s (%s)", kf_json_str(dev, "name"),
		    kf_json_str(dev, "kind") ? kf_json_str(dev, "kind") : "?");
	rp_kv(rows, "GPU / device", name);
	free(name);
	static const char *const clock_w[] = {"clock", "mhz", NULL};
	char *clocks = device_fields(dev, clock_w);
	double sm = kf_json_num(cJSON_GetObjectItem(result, "timing"),
				"sm_clock_mhz", 0);
	if (sm > 0) {
		char *c = kf_xasprintf("%s%smedian SM clock while timed %g MHz",
				       clocks, *clocks ? ", " : "", sm);
		free(clocks);
		clocks = c;
	}
	rp_kv(rows, "clocks", clocks);
	free(clocks);
	static const char *const drv_w[] = {"driver", NULL};
	char *drv = device_fields(dev, drv_w);
	rp_kv(rows, "driver", drv);
	free(drv);
	static const char *const tk_w[] = {"nvrtc", "torch_cuda",
					   "cuda_version", NULL};
	char *tk = device_fields(dev, tk_w);
	rp_kv(rows, "toolkit", tk);
	free(tk);
	rp_kv(rows, "compiler", kf_json_str(result, "toolchain"));
	rp_kv(rows, "torch", kf_json_str(dev, "torch"));
	rp_kv(rows, "kforge (evaluation)", kf_json_str(env, "kforge"));
	rp_kv(rows, "kforge (report)", KF_VERSION);
	rp_kv(rows, "OS", kf_json_str(env, "os"));
	rp_kv(rows, "host", kf_json_str(env, "host"));
	rp_kv(rows, "evaluation seed", kf_json_str(result, "seed"));
	*rows_out = rows;
}

void rp_csv_str(struct kf_strbuf *sb, const char *s, bool first)
{
	if (!first)
		kf_strbuf_addstr(sb, ",");
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		kf_strbuf_addstr(sb, s);
		return;
	}
	kf_strbuf_addstr(sb, "\"");
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			kf_strbuf_addstr(sb, "\"");
		kf_strbuf_add(sb, p, 1);
	}
	kf_strbuf_addstr(sb, "\"");
}

void rp_csv_num(struct kf_strbuf *sb, double v, bool first)
{
	if (!first)
		kf_strbuf_addstr(sb, ",");
	if (isfinite(v))
		kf_strbuf_addf(sb, "%.12g", v);
}

void rp_csv_end(struct kf_strbuf *sb)
{
	kf_strbuf_addstr(sb, "\n");
}
