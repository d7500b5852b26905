/* result.c: the human-readable report of a result JSON (`kforge eval`
 * without --json; every figure comes from the JSON, so both agree), and
 * evaluation options as JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/base.h>
#include <kforge/eval.h>

static const cJSON *get(const cJSON *o, const char *path)
{
	char key[64];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		o = cJSON_GetObjectItem(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}

static double num(const cJSON *o, const char *path)
{
	const cJSON *v = get(o, path);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *path)
{
	const cJSON *v = get(o, path);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static void timing_line(struct kf_strbuf *out, const char *label,
			const cJSON *s)
{
	const cJSON *ci = cJSON_GetObjectItem(s, "ci95");
	if (cJSON_GetArraySize(ci) != 2)
		return;
	kf_strbuf_addf(
	    out,
	    "%-10s %10.4f ms  [%.4f, %.4f] 95%% CI, IQR %.4f ms, "
	    "n=%.0f\n",
	    label, num(s, "median"), cJSON_GetArrayItem(ci, 0)->valuedouble,
	    cJSON_GetArrayItem(ci, 1)->valuedouble, num(s, "iqr"), num(s, "n"));
}

/* A timing block of KernelBench's protocol: means, and their ratio. */
static void kernelbench_line(struct kf_strbuf *out, const cJSON *tm)
{
	if (!cJSON_IsNumber(get(tm, "speedup")))
		return; /* stopped before its means: the reason says why */
	kf_strbuf_addf(out,
		       "%-10s reference %.4f ms, candidate %.4f ms (means of "
		       "%.0f event-timed calls each): %.3fx\n",
		       "kernelbench", num(tm, "reference.mean"),
		       num(tm, "candidate.mean"), num(tm, "candidate.n"),
		       num(tm, "speedup"));
}

void kf_result_print(const cJSON *r, struct kf_strbuf *out)
{
	kf_strbuf_addf(out, "%-10s %s (%s)\n", "task", str(r, "task.id"),
		       str(r, "backend"));
	kf_strbuf_addf(out, "%-10s %s\n", "candidate",
		       str(r, "candidate.path"));
	const char *check = str(r, "check");
	kf_strbuf_addf(out, "%-10s %s%s%s%s\n", "status", str(r, "status"),
		       *check ? " (" : "", check, *check ? ")" : "");
	if (cJSON_IsString(get(r, "reason")))
		kf_strbuf_addf(out, "%-10s %s\n", "reason", str(r, "reason"));
	if (!strcmp(str(r, "status"), "compile_error"))
		kf_strbuf_addf(out, "%-10s\n%s\n", "log",
			       str(r, "compile.candidate.log"));
	const cJSON *trials = get(r, "trials");
	int n = cJSON_GetArraySize(trials), passed = 0, hidden = 0;
	const cJSON *t;
	bool identical = true;
	cJSON_ArrayForEach(t, trials)
	{
		passed += cJSON_IsTrue(cJSON_GetObjectItem(t, "passed"));
		hidden += cJSON_IsTrue(cJSON_GetObjectItem(t, "hidden"));
		const cJSON *o;
		cJSON_ArrayForEach(o, cJSON_GetObjectItem(t, "outputs"))
		identical = identical &&
			    !cJSON_IsFalse(cJSON_GetObjectItem(
				o, "second_call_identical"));
	}
	if (n && passed == n)
		kf_strbuf_addf(out,
			       "%-10s %d of %d trials passed (%d on hidden "
			       "dims, seed %s); every output element written, "
			       "inputs unchanged, %s\n",
			       "checks", passed, n, hidden, str(r, "seed"),
			       identical ? "two calls identical"
					 : "two calls within the tolerance "
					   "of each other (not always the "
					   "same bits)");
	else if (n)
		kf_strbuf_addf(out, "%-10s %d of %d trials run passed\n",
			       "checks", passed, n);
	if (cJSON_IsTrue(get(r, "degenerate.flag")))
		kf_strbuf_addf(out, "%-10s degenerate task: %s\n", "warning",
			       str(r, "degenerate.why"));
	const cJSON *tm = get(r, "timing");
	if (tm && !strcmp(str(tm, "protocol"), "kernelbench")) {
		kernelbench_line(out, tm);
		tm = NULL;
	}
	if (tm && cJSON_GetArraySize(get(tm, "speedup.ci95")) != 2) {
		/* Stopped before its summaries: the reason says why. */
		kf_strbuf_addf(out, "%-10s stopped after %.0f pairs\n",
			       "timing", num(tm, "pairs"));
		tm = NULL;
	}
	if (tm) {
		timing_line(out, "reference", get(tm, "reference"));
		timing_line(out, "candidate", get(tm, "candidate"));
		const cJSON *ci = get(tm, "speedup.ci95");
		kf_strbuf_addf(out,
			       "%-10s %.3fx  [%.3f, %.3f] 95%% CI over %.0f "
			       "interleaved pairs (target +-%.1f%% %s)\n",
			       "speedup", num(tm, "speedup.median"),
			       cJSON_GetArrayItem(ci, 0)->valuedouble,
			       cJSON_GetArrayItem(ci, 1)->valuedouble,
			       num(tm, "pairs"), 100 * num(tm, "ci_target"),
			       cJSON_IsTrue(get(tm, "ci_target_met"))
				   ? "met"
				   : "not met within the time cap");
	}
	if (get(r, "timing_kernelbench"))
		kernelbench_line(out, get(r, "timing_kernelbench"));
	const cJSON *rf = get(r, "roofline");
	if (rf && cJSON_IsString(get(rf, "bound")))
		kf_strbuf_addf(
		    out,
		    "%-10s %s-bound: %.2f GFLOP/s, %.2f GB/s; "
		    "candidate at %.1f%% of the bound, reference "
		    "at %.1f%%\n",
		    "roofline", str(rf, "bound"), num(rf, "flops_per_s") / 1e9,
		    num(rf, "bytes_per_s") / 1e9, 100 * num(rf, "fraction"),
		    100 * num(rf, "reference_fraction"));
	if (get(r, "compile.candidate"))
		kf_strbuf_addf(out,
			       "%-10s candidate %.2f s%s, reference %.2f s%s\n",
			       "compile", num(r, "compile.candidate.seconds"),
			       cJSON_IsTrue(get(r, "compile.candidate.cached"))
				   ? " (cached)"
				   : "",
			       num(r, "compile.reference.seconds"),
			       cJSON_IsTrue(get(r, "compile.reference.cached"))
				   ? " (cached)"
				   : "");
	const char *log = str(r, "worker.log");
	if (*log && strcmp(str(r, "status"), "ok"))
		kf_strbuf_addf(out, "%-10s\n%s\n", "worker log", log);
	if (cJSON_IsNumber(get(r, "seconds")))
		kf_strbuf_addf(out, "%-10s %.2f s\n", "took",
			       num(r, "seconds"));
}

cJSON *kf_eval_opts_json(const struct kf_eval_opts *eo)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "backend",
				eo->backend ? eo->backend : "host");
	char seed[32];
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)eo->seed);
	cJSON_AddStringToObject(o, "seed", seed);
	cJSON_AddNumberToObject(o, "trials", eo->trials);
	if (eo->worker_path)
		cJSON_AddStringToObject(o, "worker_path", eo->worker_path);
	if (eo->include_dir)
		cJSON_AddStringToObject(o, "include_dir", eo->include_dir);
	if (eo->protocol)
		cJSON_AddStringToObject(o, "protocol", eo->protocol);
	cJSON_AddNumberToObject(o, "call_timeout_ms", eo->call_timeout_ms);
	cJSON_AddNumberToObject(o, "time_cap_s", eo->time_cap_s);
	cJSON_AddNumberToObject(o, "ci_target", eo->ci_target);
	cJSON_AddNumberToObject(o, "min_pairs", eo->min_pairs);
	cJSON_AddNumberToObject(o, "max_pairs", eo->max_pairs);
	cJSON_AddBoolToObject(o, "no_timing", eo->no_timing);
	cJSON_AddBoolToObject(o, "no_cache", eo->no_cache);
	cJSON_AddNumberToObject(o, "mem_limit_bytes",
				(double)eo->mem_limit_bytes);
	cJSON_AddNumberToObject(o, "energy_s", eo->energy_s);
	cJSON_AddBoolToObject(o, "require_custom_kernel",
			      eo->require_custom_kernel);
	return o;
}

void kf_eval_opts_from_json(const cJSON *o, struct kf_eval_opts *eo)
{
	struct kf_eval_opts d = KF_EVAL_OPTS_INIT;
	*eo = d;
	const char *b = kf_json_str(o, "backend");
	const char *seed = kf_json_str(o, "seed");
	if (b)
		eo->backend = b;
	if (seed)
		eo->seed = strtoull(seed, NULL, 10);
	eo->trials = (int)kf_json_num(o, "trials", eo->trials);
	eo->worker_path = kf_json_str(o, "worker_path");
	eo->include_dir = kf_json_str(o, "include_dir");
	eo->protocol = kf_json_str(o, "protocol");
	eo->call_timeout_ms =
	    kf_json_num(o, "call_timeout_ms", eo->call_timeout_ms);
	eo->time_cap_s = kf_json_num(o, "time_cap_s", eo->time_cap_s);
	eo->ci_target = kf_json_num(o, "ci_target", eo->ci_target);
	eo->min_pairs = (int)kf_json_num(o, "min_pairs", eo->min_pairs);
	eo->max_pairs = (int)kf_json_num(o, "max_pairs", eo->max_pairs);
	eo->no_timing = cJSON_IsTrue(cJSON_GetObjectItem(o, "no_timing"));
	eo->no_cache = cJSON_IsTrue(cJSON_GetObjectItem(o, "no_cache"));
	eo->mem_limit_bytes = (uint64_t)kf_json_num(o, "mem_limit_bytes", 0);
	eo->energy_s = kf_json_num(o, "energy_s", eo->energy_s);
	eo->require_custom_kernel =
	    cJSON_IsTrue(cJSON_GetObjectItem(o, "require_custom_kernel"));
}
