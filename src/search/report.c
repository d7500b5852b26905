/*
 * report.c: the summary of a run, built from the store alone, so that
 * `kforge optimize` (at its end) and `kforge show` print the same thing:
 * counts by status, the best candidate with its lineage, the top ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/search.h>

#include "search_int.h"

static double speedup_of(const cJSON *cand)
{
	const cJSON *e = cJSON_GetObjectItem(cand, "evaluation");
	const char *st = kf_json_str(e, "status");
	if (!st || strcmp(st, "ok"))
		return -1;
	return kf_json_num(e, "speedup", 0);
}

static int by_speedup(const void *a, const void *b)
{
	double x = speedup_of(*(cJSON *const *)a);
	double y = speedup_of(*(cJSON *const *)b);
	if (x != y)
		return (x < y) - (x > y);
	/* Ties: the earlier candidate first. */
	double sa = kf_json_num(*(cJSON *const *)a, "seq", 0);
	double sb = kf_json_num(*(cJSON *const *)b, "seq", 0);
	return (sa > sb) - (sa < sb);
}

static const cJSON *by_id(const cJSON *cands, double id)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cands)
	{
		if (kf_json_num(c, "id", -1) == id)
			return c;
	}
	return NULL;
}

/* A copy of a candidate for the report, without its source and prompt. */
static cJSON *brief(const cJSON *c)
{
	cJSON *o = cJSON_Duplicate(c, 1);
	cJSON_DeleteItemFromObject(o, "source");
	cJSON_DeleteItemFromObject(o, "prompt");
	return o;
}

int kf_search_report(struct kf_store *store, int64_t run, int top, cJSON **out,
		     struct kf_err *err)
{
	cJSON *r = NULL, *cands = NULL;
	*out = NULL;
	int rc = kf_store_run_get(store, run, &r, err);
	if (!rc)
		rc = kf_store_candidate_list(store, run, true, false, &cands,
					     err);
	if (rc) {
		cJSON_Delete(r);
		return rc;
	}
	cJSON *rep = cJSON_CreateObject();
	cJSON_AddItemToObject(rep, "run", r);
	int counts[KF_PROGRESS_STATUSES] = {0};
	int n = cJSON_GetArraySize(cands), evaluated = 0;
	cJSON **sorted = kf_xcalloc((size_t)n + 1, sizeof(*sorted));
	int ns = 0;
	cJSON *c;
	cJSON_ArrayForEach(c, cands)
	{
		const cJSON *e = cJSON_GetObjectItem(c, "evaluation");
		if (!cJSON_IsObject(e))
			continue;
		evaluated++;
		counts[kf_progress_status_index(kf_json_str(e, "status"))]++;
		if (speedup_of(c) >= 0)
			sorted[ns++] = c;
	}
	qsort(sorted, (size_t)ns, sizeof(*sorted), by_speedup);
	cJSON *bs = cJSON_AddObjectToObject(rep, "by_status");
	for (int i = 0; i < KF_PROGRESS_STATUSES; i++)
		if (counts[i])
			cJSON_AddNumberToObject(bs, kf_progress_status_name(i),
						counts[i]);
	/* Successive halving's short timings: a candidate that has only
	 * those was left behind at a rung, not pending. */
	cJSON *shorts = NULL;
	int screened_only = 0;
	if (kf_store_screening_list(store, run, false, &shorts, err) == 0) {
		cJSON_ArrayForEach(c, cands)
		{
			if (cJSON_IsObject(cJSON_GetObjectItem(c, "evaluation")))
				continue;
			const cJSON *x;
			cJSON_ArrayForEach(x, shorts)
			{
				if (kf_json_num(x, "candidate", 0) ==
				    kf_json_num(c, "id", 0)) {
					screened_only++;
					break;
				}
			}
		}
	}
	cJSON_AddNumberToObject(rep, "candidates", n);
	cJSON_AddNumberToObject(rep, "evaluated", evaluated);
	cJSON_AddNumberToObject(rep, "short_timings",
				cJSON_GetArraySize(shorts));
	cJSON_AddNumberToObject(rep, "short_timed_only", screened_only);
	cJSON_AddNumberToObject(rep, "pending", n - evaluated - screened_only);
	cJSON_Delete(shorts);
	if (ns > 0) {
		cJSON *best = cJSON_Duplicate(sorted[0], 1);
		cJSON_DeleteItemFromObject(best, "prompt");
		/* Lineage: the chain of first parents, the best first. */
		cJSON *lin = cJSON_AddArrayToObject(best, "lineage");
		const cJSON *at = sorted[0];
		for (int hops = 0; at && hops <= n; hops++) {
			cJSON_AddItemToArray(
			    lin, cJSON_CreateNumber(kf_json_num(at, "id", 0)));
			const cJSON *p0 = cJSON_GetArrayItem(
			    cJSON_GetObjectItem(at, "parents"), 0);
			at = cJSON_IsNumber(p0) ? by_id(cands, p0->valuedouble)
						: NULL;
		}
		cJSON_AddItemToObject(rep, "best", best);
	} else {
		cJSON_AddNullToObject(rep, "best");
	}
	cJSON *tops = cJSON_AddArrayToObject(rep, "top");
	for (int i = 0; i < ns && i < top; i++)
		cJSON_AddItemToArray(tops, brief(sorted[i]));
	/* The candidates that did not pass, the first `top` of them in the
	 * order they were evaluated, with their reasons. */
	cJSON *failed = cJSON_AddArrayToObject(rep, "failed");
	int nf = 0;
	cJSON_ArrayForEach(c, cands)
	{
		const cJSON *e = cJSON_GetObjectItem(c, "evaluation");
		const char *st = kf_json_str(e, "status");
		if (!cJSON_IsObject(e) || !st || !strcmp(st, "ok"))
			continue;
		if (nf++ < top)
			cJSON_AddItemToArray(failed, brief(c));
	}
	cJSON_AddNumberToObject(rep, "failed_total", nf);
	free(sorted);
	cJSON_Delete(cands);
	*out = rep;
	return 0;
}

/* "LANES=32 ROWS=2", else the origin, else "-". */
static void label(const cJSON *c, char *buf, size_t n)
{
	const cJSON *params = cJSON_GetObjectItem(c, "params");
	const char *origin = kf_json_str(c, "origin");
	size_t len = 0;
	buf[0] = '\0';
	const cJSON *v;
	if (cJSON_IsObject(params))
		cJSON_ArrayForEach(v, params)
		{
			if (len >= n)
				break;
			len += (size_t)snprintf(
			    buf + len, n - len, "%s%s=%s", len ? " " : "",
			    v->string,
			    cJSON_IsString(v) ? v->valuestring : "?");
		}
	if (!len)
		snprintf(buf, n, "%s", origin ? origin : "-");
}

static void speedup_str(const cJSON *e, char *buf, size_t n)
{
	const cJSON *ci = cJSON_GetObjectItem(e, "speedup_ci95");
	const cJSON *lo = cJSON_GetArrayItem(ci, 0);
	const cJSON *hi = cJSON_GetArrayItem(ci, 1);
	if (!cJSON_IsNumber(cJSON_GetObjectItem(e, "speedup")))
		snprintf(buf, n, "-");
	else if (cJSON_IsNumber(lo) && cJSON_IsNumber(hi))
		snprintf(buf, n, "%.3fx [%.3f, %.3f]",
			 kf_json_num(e, "speedup", 0), lo->valuedouble,
			 hi->valuedouble);
	else
		snprintf(buf, n, "%.3fx", kf_json_num(e, "speedup", 0));
}

/* The failed candidates, one paragraph each: id, status/check, origin,
 * and the whole reason. */
static void print_failed(const cJSON *rep, struct kf_strbuf *out)
{
	const cJSON *failed = cJSON_GetObjectItem(rep, "failed");
	int shown = cJSON_GetArraySize(failed);
	int total = (int)kf_json_num(rep, "failed_total", shown);
	if (total == 0)
		return;
	kf_strbuf_addf(out, "\nfailed     %d candidate%s", total,
		       total == 1 ? "" : "s");
	if (shown < total)
		kf_strbuf_addf(out, " (the first %d below; kforge show RUN "
				    "--candidate ID for any other)",
			       shown);
	kf_strbuf_addstr(out, "\n");
	const cJSON *c;
	char lab[512];
	cJSON_ArrayForEach(c, failed)
	{
		const cJSON *e = cJSON_GetObjectItem(c, "evaluation");
		const char *check = kf_json_str(e, "check");
		const char *reason = kf_json_str(e, "reason");
		label(c, lab, sizeof(lab));
		kf_strbuf_addf(out, "  %-6.0f %s%s%s  %s\n         %s\n",
			       kf_json_num(c, "id", 0), kf_json_str(e, "status"),
			       check ? "/" : "", check ? check : "", lab,
			       reason ? reason : "(no reason recorded)");
	}
}

void kf_search_report_print(const cJSON *rep, struct kf_strbuf *out)
{
	const cJSON *r = cJSON_GetObjectItem(rep, "run");
	const cJSON *best = cJSON_GetObjectItem(rep, "best");
	const char *note = kf_json_str(r, "note");
	const char *fin = kf_json_str(r, "finished_at");
	kf_strbuf_addf(out, "run        %.0f  %s (%s)  policy %s  state %s\n",
		       kf_json_num(r, "id", 0), kf_json_str(r, "task_id"),
		       kf_json_str(r, "backend"), kf_json_str(r, "policy"),
		       kf_json_str(r, "state"));
	kf_strbuf_addf(out, "task       %s\n", kf_json_str(r, "task"));
	if (note)
		kf_strbuf_addf(out, "note       %s\n", note);
	kf_strbuf_addf(out, "started    %s%s%s\n", kf_json_str(r, "started_at"),
		       fin ? ", finished " : "", fin ? fin : "");
	double shorts = kf_json_num(rep, "short_timings", 0);
	if (shorts > 0)
		kf_strbuf_addf(out,
			       "budget     %.0f evaluations: %.0f done (%.0f "
			       "full, %.0f short timings), %.0f candidates "
			       "stored (%.0f timed only briefly)",
			       kf_json_num(r, "budget", 0),
			       kf_json_num(rep, "evaluated", 0) + shorts,
			       kf_json_num(rep, "evaluated", 0), shorts,
			       kf_json_num(rep, "candidates", 0),
			       kf_json_num(rep, "short_timed_only", 0));
	else
		kf_strbuf_addf(out,
			       "budget     %.0f evaluations: %.0f done, %.0f "
			       "candidates stored",
			       kf_json_num(r, "budget", 0),
			       kf_json_num(rep, "evaluated", 0),
			       kf_json_num(rep, "candidates", 0));
	if (kf_json_num(rep, "pending", 0) > 0)
		kf_strbuf_addf(out, " (%.0f not evaluated yet)",
			       kf_json_num(rep, "pending", 0));
	kf_strbuf_addstr(out, "\nstatuses  ");
	const cJSON *v;
	cJSON_ArrayForEach(v, cJSON_GetObjectItem(rep, "by_status"))
	{
		kf_strbuf_addf(out, " %s %.0f", v->string, v->valuedouble);
	}
	kf_strbuf_addstr(out, "\n");
	if (!cJSON_IsObject(best)) {
		kf_strbuf_addstr(out, "best       none: no candidate passed\n");
		print_failed(rep, out);
		return;
	}
	const cJSON *be = cJSON_GetObjectItem(best, "evaluation");
	char sp[96], lab[512];
	speedup_str(be, sp, sizeof(sp));
	label(best, lab, sizeof(lab));
	kf_strbuf_addf(out,
		       "best       candidate %.0f: %s over the reference, "
		       "status %s (%s)\n",
		       kf_json_num(best, "id", 0), sp,
		       kf_json_str(be, "status"), lab);
	kf_strbuf_addstr(out, "lineage   ");
	int hop = 0;
	cJSON_ArrayForEach(v, cJSON_GetObjectItem(best, "lineage"))
	{
		kf_strbuf_addf(out, "%s %.0f", hop++ ? " <-" : "",
			       v->valuedouble);
	}
	kf_strbuf_addstr(out, "\n\n");
	kf_strbuf_addf(out, "%-5s %-6s %-7s %-30s %10s %10s  %s\n", "rank",
		       "cand", "status", "speedup [95% CI]", "cand ms",
		       "ref ms", "params / origin");
	int rank = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "top"))
	{
		const cJSON *e = cJSON_GetObjectItem(c, "evaluation");
		speedup_str(e, sp, sizeof(sp));
		label(c, lab, sizeof(lab));
		kf_strbuf_addf(
		    out, "%-5d %-6.0f %-7s %-30s %10.4f %10.4f  %s\n", ++rank,
		    kf_json_num(c, "id", 0), kf_json_str(e, "status"), sp,
		    kf_json_num(e, "candidate_ms", 0),
		    kf_json_num(e, "reference_ms", 0), lab);
	}
	print_failed(rep, out);
}
