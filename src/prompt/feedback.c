/*
 * feedback.c: turns a result JSON (docs/results.md) into the text a model
 * reads on its next turn: what failed and where, or how fast it ran and
 * how close to the hardware's limits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/prompt.h>

#define LOG_CAP 4096	    /* bytes of a compiler log passed on */
#define WORKER_LOG_CAP 1024 /* bytes of the worker's stderr passed on */
#define PROFILE_CAP 6144    /* bytes of a profile's advice passed on */

/* Appends at most cap bytes of s, cut at a line end when one is near. */
static void add_head(struct kf_strbuf *sb, const char *s, size_t cap)
{
	size_t n = strlen(s);
	if (n <= cap) {
		kf_strbuf_addstr(sb, s);
		if (n && s[n - 1] != '\n')
			kf_strbuf_addstr(sb, "\n");
		return;
	}
	size_t cut = cap;
	while (cut > cap / 2 && s[cut - 1] != '\n')
		cut--;
	if (cut == cap / 2)
		cut = cap;
	kf_strbuf_add(sb, s, cut);
	kf_strbuf_addf(sb, "%s[... %zu more bytes of the log left out]\n",
		       s[cut - 1] == '\n' ? "" : "\n", n - cut);
}

/* Appends the last cap bytes of s. */
static void add_tail(struct kf_strbuf *sb, const char *s, size_t cap)
{
	size_t n = strlen(s);
	if (n > cap) {
		kf_strbuf_addf(sb, "[... %zu earlier bytes left out]\n",
			       n - cap);
		s += n - cap;
	}
	kf_strbuf_addstr(sb, s);
	if (n && s[strlen(s) - 1] != '\n')
		kf_strbuf_addstr(sb, "\n");
}

static void add_value(struct kf_strbuf *sb, const cJSON *v)
{
	if (cJSON_IsNumber(v))
		kf_strbuf_addf(sb, "%.9g", v->valuedouble);
	else if (cJSON_IsString(v))
		kf_strbuf_addstr(sb, v->valuestring);
	else
		kf_strbuf_addstr(sb, "?");
}

static void add_dims(struct kf_strbuf *sb, const cJSON *dims)
{
	int k = 0;
	for (const cJSON *d = dims ? dims->child : NULL; d; d = d->next)
		if (cJSON_IsNumber(d) && d->string)
			kf_strbuf_addf(sb, "%s%s=%.0f", k++ ? " " : "",
				       d->string, d->valuedouble);
}

static void add_failure(struct kf_strbuf *sb, const cJSON *f)
{
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(f, "index");
	kf_strbuf_addf(sb, "Worst element: output '%s' at [",
		       kf_json_str(f, "output") ? kf_json_str(f, "output")
						: "?");
	int k = 0;
	for (const cJSON *i = idx ? idx->child : NULL; i; i = i->next)
		if (cJSON_IsNumber(i))
			kf_strbuf_addf(sb, "%s%.0f", k++ ? ", " : "",
				       i->valuedouble);
	kf_strbuf_addstr(sb, "]: got ");
	add_value(sb, cJSON_GetObjectItemCaseSensitive(f, "got"));
	kf_strbuf_addstr(sb, ", expected ");
	add_value(sb, cJSON_GetObjectItemCaseSensitive(f, "want"));
	double allowed = kf_json_num(f, "allowed", NAN);
	if (!isnan(allowed))
		kf_strbuf_addf(sb, " (allowed error %.3g)", allowed);
	kf_strbuf_addf(sb, "; %.0f of %.0f elements outside the tolerance, at ",
		       kf_json_num(f, "mismatches", 0), kf_json_num(f, "n", 0));
	add_dims(sb, cJSON_GetObjectItemCaseSensitive(f, "dims"));
	kf_strbuf_addstr(sb, ".\n");
}

/* The failing trial's per-output counts. */
static void add_trial(struct kf_strbuf *sb, const cJSON *trials)
{
	int n = cJSON_GetArraySize(trials), passed = 0;
	const cJSON *bad = NULL;
	for (const cJSON *t = trials ? trials->child : NULL; t; t = t->next) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "passed")))
			passed++;
		else
			bad = t;
	}
	if (!bad)
		return;
	kf_strbuf_addf(
	    sb,
	    "%d of %d trials passed before this one. In trial "
	    "%.0f (%s dims ",
	    passed, n, kf_json_num(bad, "index", -1),
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bad, "hidden"))
		? "hidden"
		: "timing");
	add_dims(sb, cJSON_GetObjectItemCaseSensitive(bad, "dims"));
	kf_strbuf_addstr(sb, "):\n");
	const cJSON *outs = cJSON_GetObjectItemCaseSensitive(bad, "outputs");
	for (const cJSON *o = outs ? outs->child : NULL; o; o = o->next)
		kf_strbuf_addf(
		    sb,
		    "- output '%s': %.0f of %.0f elements wrong, "
		    "%.0f not written, %.0f NaN, %.0f infinite; "
		    "max abs error %.3g, max rel error %.3g\n",
		    kf_json_str(o, "name") ? kf_json_str(o, "name") : "?",
		    kf_json_num(o, "mismatches", 0), kf_json_num(o, "n", 0),
		    kf_json_num(o, "unwritten", 0),
		    kf_json_num(o, "nan_got", 0), kf_json_num(o, "inf_got", 0),
		    kf_json_num(o, "max_abs", 0), kf_json_num(o, "max_rel", 0));
}

static void add_timing(struct kf_strbuf *sb, const cJSON *timing,
		       const cJSON *roof)
{
	const cJSON *ref =
	    cJSON_GetObjectItemCaseSensitive(timing, "reference");
	const cJSON *cand =
	    cJSON_GetObjectItemCaseSensitive(timing, "candidate");
	const cJSON *sp = cJSON_GetObjectItemCaseSensitive(timing, "speedup");
	const cJSON *ci = cJSON_GetObjectItemCaseSensitive(sp, "ci95");
	kf_strbuf_addf(sb,
		       "Timing: your kernel %.4g ms, the reference %.4g ms "
		       "(medians); speedup %.3gx",
		       kf_json_num(cand, "median", 0),
		       kf_json_num(ref, "median", 0),
		       kf_json_num(sp, "median", 0));
	if (cJSON_GetArraySize(ci) == 2 && cJSON_IsNumber(ci->child) &&
	    cJSON_IsNumber(ci->child->next))
		kf_strbuf_addf(sb, " (95%% interval %.3g to %.3g)",
			       ci->child->valuedouble,
			       ci->child->next->valuedouble);
	kf_strbuf_addstr(sb, ".\n");
	const char *bound = kf_json_str(roof, "bound");
	if (!cJSON_IsObject(roof))
		return;
	if (!bound) {
		kf_strbuf_addstr(sb, "Roofline: the machine's peaks are "
				     "unknown.\n");
		return;
	}
	kf_strbuf_addf(sb,
		       "Roofline: %s-bound; the fastest possible time is "
		       "%.4g ms, so your kernel reaches %.1f%% of the bound "
		       "(the reference %.1f%%); it moves %.3g GB/s and does "
		       "%.3g GFLOP/s.\n",
		       bound, kf_json_num(roof, "bound_ms", 0),
		       100.0 * kf_json_num(roof, "fraction", 0),
		       100.0 * kf_json_num(roof, "reference_fraction", 0),
		       kf_json_num(roof, "bytes_per_s", 0) / 1e9,
		       kf_json_num(roof, "flops_per_s", 0) / 1e9);
}

char *kf_prompt_feedback(const cJSON *result)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	const char *status = kf_json_str(result, "status");
	const char *check = kf_json_str(result, "check");
	const char *reason = kf_json_str(result, "reason");
	if (!status) {
		kf_strbuf_addstr(&sb, "No result: the evaluation did not "
				      "produce one.\n");
		return kf_strbuf_detach(&sb);
	}
	kf_strbuf_addf(&sb, "Status: %s", status);
	if (check)
		kf_strbuf_addf(&sb, " (check: %s)", check);
	kf_strbuf_addstr(&sb, "\n");
	if (reason)
		kf_strbuf_addf(&sb, "Reason: %s\n", reason);
	const cJSON *cc = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(result, "compile"), "candidate");
	const char *log = kf_json_str(cc, "log");
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cc, "ok")) && log &&
	    *log) {
		kf_strbuf_addstr(&sb, "Compiler output:\n");
		add_head(&sb, log, LOG_CAP);
	}
	const cJSON *failure =
	    cJSON_GetObjectItemCaseSensitive(result, "failure");
	if (failure)
		add_failure(&sb, failure);
	if (strcmp(status, "ok") != 0)
		add_trial(&sb,
			  cJSON_GetObjectItemCaseSensitive(result, "trials"));
	const cJSON *worker =
	    cJSON_GetObjectItemCaseSensitive(result, "worker");
	const char *wlog = kf_json_str(worker, "log");
	if (strcmp(status, "ok") != 0 && wlog && *wlog) {
		kf_strbuf_addstr(&sb, "What the kernel's process printed:\n");
		add_tail(&sb, wlog, WORKER_LOG_CAP);
	}
	const cJSON *timing =
	    cJSON_GetObjectItemCaseSensitive(result, "timing");
	if (cJSON_IsObject(timing))
		add_timing(
		    &sb, timing,
		    cJSON_GetObjectItemCaseSensitive(result, "roofline"));
	else if (strcmp(status, "ok") == 0)
		kf_strbuf_addstr(&sb, "Correct on every trial; not timed.\n");
	/* The profile feedback mode's advice (src/profile), when the result
	 * carries one. */
	const cJSON *prof = cJSON_GetObjectItemCaseSensitive(result, "profile");
	const char *ptext = kf_json_str(prof, "text");
	const char *perr = kf_json_str(prof, "error");
	if (ptext && *ptext)
		add_head(&sb, ptext, PROFILE_CAP);
	else if (perr)
		kf_strbuf_addf(&sb, "Profile: not available (%s).\n", perr);
	/* Everything above came from outside: cap it and make it safe. */
	char *s = kf_strbuf_detach(&sb);
	if (strlen(s) > KF_PROMPT_FEEDBACK_CAP) {
		static const char cut[] = "\n[... feedback cut here]\n";
		memcpy(s + KF_PROMPT_FEEDBACK_CAP - sizeof(cut), cut,
		       sizeof(cut));
	}
	kf_text_sanitize(s);
	return s;
}
