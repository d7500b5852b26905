/*
 * eval_test.c: the supervisor end to end on the host backend: each fault a
 * candidate can commit becomes the right status with a reason a user can act
 * on, and the next evaluation in the same process runs normally.
 */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/eval.h>

#include "harness.h"

#define ROWSUM "tests/fixtures/rowsum"
#define CAND(name) ROWSUM "/candidates/" name ".c"

static void use_tmp_cache(void)
{
	char *dir = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", dir, 1);
	free(dir);
}

static struct kf_eval_opts quick(void)
{
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	o.seed = 1; /* reasons below name the trials' seeds */
	o.no_timing = true;
	o.include_dir = "include";
	o.mem_limit_bytes = 1ull << 30;
	return o;
}

/* Evaluates and returns the result; fails the case on an engine error. */
static cJSON *run(const char *task, const char *cand,
		  const struct kf_eval_opts *o)
{
	struct kf_err err = KF_ERR_INIT;
	cJSON *res = NULL;
	int rc = kf_eval(task, cand, o, &res, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(res != NULL);
	return res;
}

static const char *status(const cJSON *r)
{
	return kf_json_str(r, "status");
}

static const char *reason(const cJSON *r)
{
	const char *s = kf_json_str(r, "reason");
	return s ? s : "";
}

/* Runs a faulty candidate, checks its status and reason, then checks that
 * an honest candidate still passes in the same process. */
static void fault_at(const char *cand, const char *want_status,
		     const char *want_check, const char *want_reason,
		     uint64_t mem)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	if (mem)
		o.mem_limit_bytes = mem;
	cJSON *r = run(ROWSUM, cand, &o);
	CHECK_MSG(!strcmp(status(r), want_status), "status %s (%s), want %s",
		  status(r), reason(r), want_status);
	if (want_check)
		CHECK_STR(kf_json_str(r, "check"), want_check);
	CHECK_CONTAINS(reason(r), want_reason);
	cJSON_Delete(r);
	r = run(ROWSUM, CAND("same"), &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "after the fault: %s (%s)",
		  status(r), reason(r));
	cJSON_Delete(r);
}

static void fault(const char *cand, const char *want_status,
		  const char *want_check, const char *want_reason)
{
	fault_at(cand, want_status, want_check, want_reason, 0);
}

static void test_eval_honest_candidate_passes_with_details(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, CAND("same"), &o);
	CHECK_STR(status(r), "ok");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "reason")));
	const cJSON *trials = cJSON_GetObjectItem(r, "trials");
	CHECK(cJSON_GetArraySize(trials) == 6);
	int hidden = 0;
	const cJSON *t;
	cJSON_ArrayForEach(t, trials)
	{
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(t, "passed")));
		hidden += cJSON_IsTrue(cJSON_GetObjectItem(t, "hidden"));
	}
	CHECK(hidden == 4); /* dim sets 1 and 2, twice each */
	CHECK(!cJSON_IsTrue(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "degenerate"), "flag")));
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(r, "task"), "id"),
		  "fixtures/rowsum");
	cJSON_Delete(r);
}

static void test_eval_segfault_is_runtime_error(void)
{
	fault(CAND("segv"), "runtime_error", "crash", "SIGSEGV");
}

static void test_eval_abort_is_runtime_error(void)
{
	fault(CAND("abort"), "runtime_error", "crash", "SIGABRT");
}

static void test_eval_exit_in_candidate_is_rejected_by_link_policy(void)
{
	fault(CAND("exits"), "rejected", "link_policy", "exit (process state)");
}

static void test_eval_infinite_loop_is_timeout(void)
{
	fault(CAND("loop"), "timeout", "deadline", "trial 0");
}

/* A constructor that spins (or sleeps) is the candidate's timeout once the
 * load budget (KF_LOAD_BUDGET_MS, 5 s) has passed, not a worker held for
 * the load phase's deadline (60 s of CPU time). Judged by what the engine
 * measured (its reason's figures: CPU time for the spin, wall time for the
 * sleep, which a busy machine does not stretch), not by this test's wall
 * clock: with the cores loaded five times over the spin's 5 s of CPU took
 * 41 s of wall time for the two evaluations. */
static void ctor_holds(const char *cand, const char *how)
{
	fault(cand, "timeout", "load_time", "in its constructors");
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, cand, &o);
	CHECK_CONTAINS(reason(r), "the candidate spent ");
	CHECK_CONTAINS(reason(r), "over the limit of 5 s");
	double wall = -1, cpu = -1;
	const char *at = strstr(reason(r), "the candidate spent ");
	if (at)
		(void)sscanf(at, "the candidate spent %lf s loading (%lf s of CPU",
			     &wall, &cpu);
	CHECK_MSG(cpu >= 0 && cpu < 30, "%s: %s", how, reason(r));
	if (!strcmp(how, "sleep"))
		CHECK_MSG(wall >= 5 && wall < 30, "%s: %s", how, reason(r));
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "trials")) ||
	      cJSON_GetArraySize(cJSON_GetObjectItem(r, "trials")) == 0);
	cJSON_Delete(r);
}

static void test_eval_constructor_spin_is_load_timeout(void)
{
	ctor_holds(CAND("ctor_spin"), "spin");
}

static void test_eval_constructor_sleep_is_load_timeout(void)
{
	ctor_holds(CAND("ctor_sleep"), "sleep");
}

static void test_eval_memory_exhaustion_is_runtime_error(void)
{
	/* A limit of 384 MiB: the candidate dies within the call's 3 s even
	 * under AddressSanitizer on a busy machine (at 1 GiB it once took
	 * longer there and was a timeout). */
	fault_at(CAND("oom"), "runtime_error", "crash", "the worker died",
		 384ull << 20);
}

/* A candidate that keeps 400 MiB of touched memory (within the host
 * worker's address-space limit) is stopped past KFORGE_RUNNER_MEM_MB plus
 * four times its tensors, by the worker after its first call:
 * runtime_error/memory, naming both; the reference as candidate runs ok
 * under the same limit (fault_at). A bad value is refused before the
 * worker starts, naming the variable. */
static void test_eval_runner_memory_limit(void)
{
	setenv("KFORGE_RUNNER_MEM_MB", "256", 1);
	fault_at(CAND("hoard"), "runtime_error", "memory",
		 "MiB (KFORGE_RUNNER_MEM_MB=256 plus four times its",
		 0);
	setenv("KFORGE_RUNNER_MEM_MB", "100", 1);
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, CAND("same"), &o);
	CHECK_STR(status(r), "infra_error");
	CHECK_STR(kf_json_str(r, "check"), "spawn");
	CHECK_CONTAINS(reason(r), "KFORGE_RUNNER_MEM_MB=100: a candidate "
				  "runner's resident memory limit is a whole "
				  "number of MiB, at least 256");
	cJSON_Delete(r);
	unsetenv("KFORGE_RUNNER_MEM_MB");
}

static void test_eval_partial_output_is_wrong_answer(void)
{
	fault(CAND("partial"), "wrong_answer", "unwritten",
	      "32 of 64 elements were not written");
}

static void test_eval_input_mutation_is_rejected(void)
{
	fault(CAND("mutate"), "rejected", "input_mutation",
	      "the candidate stored into its inputs, which its process maps "
	      "read-only on the host");
}

static void test_eval_nonzero_return_is_runtime_error(void)
{
	fault(CAND("nonzero"), "runtime_error", "return_code",
	      "kf_entry returned 3");
}

static void test_eval_nondeterminism_is_rejected(void)
{
	fault(CAND("nondet"), "rejected", "nondeterministic",
	      "differs between two calls");
}

static void test_eval_hardcoded_shape_fails_on_hidden_dims(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, CAND("hardcode"), &o);
	CHECK_STR(status(r), "wrong_answer");
	CHECK_STR(kf_json_str(r, "check"), "mismatch");
	/* Trial 0 is on the timing dims and passes; trial 1 is hidden. */
	CHECK_CONTAINS(reason(r), "trial 1 (seed 2, hidden dims B=3 N=100");
	CHECK_CONTAINS(reason(r), "output 'y'");
	CHECK_CONTAINS(reason(r), "worst at [");
	const cJSON *f = cJSON_GetObjectItem(r, "failure");
	CHECK(f != NULL);
	CHECK(kf_json_num(f, "trial", -1) == 1);
	CHECK(kf_json_num(cJSON_GetObjectItem(f, "dims"), "N", 0) == 100);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(f, "index")) == 1);
	cJSON_Delete(r);
}

static void test_eval_compile_error_names_file_and_line(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, CAND("syntax"), &o);
	CHECK_STR(status(r), "compile_error");
	CHECK_CONTAINS(reason(r), "syntax.c:8");
	CHECK_CONTAINS(reason(r), "error");
	const cJSON *c =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "compile"), "candidate");
	CHECK_CONTAINS(kf_json_str(c, "log"), "expected");
	cJSON_Delete(r);
}

static void test_eval_missing_entry_is_load_error(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, CAND("noentry"), &o);
	CHECK_STR(status(r), "load_error");
	CHECK_CONTAINS(reason(r), "noentry.c");
	CHECK_CONTAINS(reason(r), "no symbol kf_entry");
	cJSON_Delete(r);
}

static void test_eval_candidate_output_does_not_break_frames(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, CAND("printer"), &o);
	CHECK_STR(status(r), "ok");
	/* What it printed is in the log, made safe: control bytes and
	 * invalid UTF-8 (0xff 0xfe) become '?'. */
	const char *log = kf_json_str(cJSON_GetObjectItem(r, "worker"), "log");
	CHECK_CONTAINS(log, "?????? hello from the candidate");
	cJSON_Delete(r);
}

static void test_eval_trials_cover_each_dimset_with_several_dists(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, CAND("same"), &o);
	/* Six trials over three dim sets and two distributions: every dim
	 * set, the timing one included, sees both distributions. */
	const char *seen[3][2] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
	const cJSON *t;
	int k = 0;
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(r, "trials"))
	{
		const char *d =
		    kf_json_str(cJSON_GetObjectItem(t, "dists"), "x");
		seen[k % 3][k / 3] = d;
		k++;
	}
	CHECK(k == 6);
	for (int s = 0; s < 3; s++)
		CHECK_MSG(seen[s][0] && seen[s][1] &&
			      strcmp(seen[s][0], seen[s][1]),
			  "dim set %d saw only %s", s, seen[s][0]);
	cJSON_Delete(r);
}

static void test_eval_timed_calls_are_checked(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.time_cap_s = 1;
	cJSON *r = run(ROWSUM, CAND("timed_cheat"), &o);
	CHECK_STR(status(r), "wrong_answer");
	CHECK_STR(kf_json_str(r, "check"), "timed_output");
	cJSON_Delete(r);
}

static void test_eval_kernelbench_protocol_reports_means(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.protocol = "kernelbench";
	cJSON *r = run(ROWSUM, CAND("same"), &o);
	CHECK_STR(status(r), "ok");
	const cJSON *tm = cJSON_GetObjectItem(r, "timing");
	CHECK(tm != NULL);
	CHECK_STR(kf_json_str(tm, "protocol"), "kernelbench");
	/* 101 timed calls per side, the first dropped. */
	CHECK(kf_json_num(cJSON_GetObjectItem(tm, "candidate"), "n", 0) == 100);
	CHECK(kf_json_num(cJSON_GetObjectItem(tm, "reference"), "n", 0) == 100);
	double sp = kf_json_num(tm, "speedup", 0);
	double rm =
	    kf_json_num(cJSON_GetObjectItem(tm, "reference"), "mean", 0);
	double cm =
	    kf_json_num(cJSON_GetObjectItem(tm, "candidate"), "mean", 0);
	CHECK(rm > 0 && cm > 0);
	CHECK(fabs(sp - rm / cm) < 1e-9 * sp);
	/* The candidate's mean is held to the hardware's bound under this
	 * protocol too; it has no pairs (nor their interval). */
	const cJSON *rf = cJSON_GetObjectItem(r, "roofline");
	CHECK(rf != NULL);
	CHECK(kf_json_num(rf, "bytes", 0) > 0);
	CHECK(cJSON_GetObjectItem(tm, "ci_target_met") == NULL);
	cJSON_Delete(r);
}

/* A result stopped during timing, before the summaries (a Python
 * candidate rejected for unaccounted time had pairs but no medians), prints
 * its status and reason in text: it once crashed kforge eval. */
static void test_eval_text_of_a_result_stopped_while_timed(void)
{
	static const char *const results[] = {
	    "{\"task\": {\"id\": \"kernelbench/level1/3_Sum_reduction\"}, "
	    "\"status\": \"rejected\", \"check\": \"unaccounted_time\", "
	    "\"reason\": \"timing: its process under-reported its time\", "
	    "\"timing\": {\"protocol\": \"kforge\", \"pairs\": 32, "
	    "\"unaccounted_ms\": {\"difference\": 0.58}}}",
	    "{\"task\": {\"id\": \"row_sum\"}, \"status\": \"wrong_answer\", "
	    "\"check\": \"timed_output\", \"reason\": \"timing (kernelbench): "
	    "the output of call 2\", \"timing\": {\"protocol\": "
	    "\"kernelbench\"}}",
	};
	for (size_t i = 0; i < sizeof(results) / sizeof(*results); i++) {
		cJSON *r = cJSON_Parse(results[i]);
		CHECK(r != NULL);
		struct kf_strbuf sb = KF_STRBUF_INIT;
		kf_result_print(r, &sb);
		const char *txt = kf_strbuf_str(&sb);
		CHECK_CONTAINS(txt, i ? "wrong_answer (timed_output)"
				      : "rejected (unaccounted_time)");
		CHECK_CONTAINS(txt, i ? "the output of call 2"
				      : "under-reported its time");
		CHECK(strstr(txt, "nan") == NULL);
		if (!i)
			CHECK_CONTAINS(txt, "stopped after 32 pairs");
		kf_strbuf_release(&sb);
		cJSON_Delete(r);
	}
}

/* The text says the two calls on the same inputs were identical only when
 * they were: under determinism "tolerance" (KernelBench-format tasks) a
 * candidate whose calls differ within the tolerance passes, and the line
 * says so (a blind round found it said "identical" of calls 2.3e-5
 * apart); the result's outputs carry second_call_identical. */
static void test_eval_text_says_calls_identical_only_when_they_were(void)
{
	for (int same = 0; same < 2; same++) {
		char *text = kf_xasprintf(
		    "{\"task\": {\"id\": \"k\"}, \"status\": \"ok\", "
		    "\"seed\": \"44\", \"trials\": [{\"passed\": true, "
		    "\"hidden\": false, \"outputs\": [{\"name\": \"y\", "
		    "\"second_call_identical\": %s}]}]}",
		    same ? "true" : "false");
		cJSON *r = cJSON_Parse(text);
		CHECK(r != NULL);
		struct kf_strbuf sb = KF_STRBUF_INIT;
		kf_result_print(r, &sb);
		const char *txt = kf_strbuf_str(&sb);
		CHECK_CONTAINS(txt, "1 of 1 trials passed");
		if (same)
			CHECK_CONTAINS(txt, "two calls identical");
		else
			CHECK_CONTAINS(txt, "two calls within the tolerance "
					    "of each other");
		kf_strbuf_release(&sb);
		cJSON_Delete(r);
		free(text);
	}
	/* A real result carries the flag. */
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(ROWSUM, CAND("same"), &o);
	const cJSON *out0 = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "trials"),
						   0),
				"outputs"),
	    0);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(out0, "second_call_identical")));
	cJSON_Delete(r);
}

static void test_eval_both_protocols_side_by_side(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.time_cap_s = 1;
	o.protocol = "both";
	cJSON *r = run(ROWSUM, CAND("same"), &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s: %s", status(r), reason(r));
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(r, "timing"), "protocol"),
		  "kforge");
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(r, "timing_kernelbench"),
			      "protocol"),
		  "kernelbench");
	cJSON_Delete(r);
}

/* KernelBench's protocol checks no timed output; kforge still compares
 * the last ones, so a candidate that skips work once it is timed fails. */
static void test_eval_kernelbench_protocol_still_checks_outputs(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.protocol = "kernelbench";
	cJSON *r = run(ROWSUM, CAND("timed_cheat"), &o);
	CHECK_STR(status(r), "wrong_answer");
	CHECK_STR(kf_json_str(r, "check"), "timed_output");
	cJSON_Delete(r);
}

static void test_eval_unknown_protocol_is_an_error(void)
{
	struct kf_eval_opts o = quick();
	o.protocol = "fast";
	struct kf_err err = KF_ERR_INIT;
	cJSON *r = NULL;
	CHECK(kf_eval(ROWSUM, CAND("same"), &o, &r, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "--protocol: unknown protocol 'fast'");
	CHECK(r == NULL);
}

static void test_eval_timing_reports_speedup_and_roofline(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.time_cap_s = 1;
	cJSON *r = run(ROWSUM, CAND("same"), &o);
	CHECK_STR(status(r), "ok");
	const cJSON *tm = cJSON_GetObjectItem(r, "timing");
	CHECK(tm != NULL);
	const cJSON *sp = cJSON_GetObjectItem(tm, "speedup");
	double lo =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(sp, "ci95"), 0)->valuedouble;
	double hi =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(sp, "ci95"), 1)->valuedouble;
	double med = kf_json_num(sp, "median", 0);
	/* The interval brackets its own median (no claim on the value). */
	CHECK(lo <= med && med <= hi && med > 0);
	CHECK(kf_json_num(tm, "pairs", 0) >= 20);
	const cJSON *rf = cJSON_GetObjectItem(r, "roofline");
	CHECK(kf_json_num(rf, "peak_bytes_per_s", 0) > 0);
	CHECK(kf_json_num(rf, "peak_flops_per_s", 0) > 0);
	const char *bound = kf_json_str(rf, "bound");
	CHECK(bound && (!strcmp(bound, "memory") || !strcmp(bound, "compute")));
	CHECK(kf_json_num(rf, "flops", 0) == 64 * 256);
	/* What each side's measurement left out of the worker's view, and
	 * the median difference within a pair, which the judge holds to the
	 * margin. */
	const cJSON *u = cJSON_GetObjectItem(tm, "unaccounted_ms");
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(u, "candidate")));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(u, "reference")));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(u, "difference")));
	cJSON_Delete(r);
}

static void test_eval_degenerate_task_is_flagged(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run("tests/fixtures/constant",
		       "tests/fixtures/constant/candidates/zeros.c", &o);
	CHECK_STR(status(r), "ok");
	const cJSON *d = cJSON_GetObjectItem(r, "degenerate");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(d, "flag")));
	CHECK_CONTAINS(kf_json_str(d, "why"), "output 'y'");
	cJSON_Delete(r);
}

/* A reference whose values are zero in real arithmetic and float noise in
 * its own (all within atol of zero): zeros pass, so the task is flagged. */
static void test_eval_near_zero_task_is_flagged(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run("tests/fixtures/near_zero",
		       "tests/fixtures/near_zero/candidates/zeros.c", &o);
	CHECK_STR(status(r), "ok");
	const cJSON *d = cJSON_GetObjectItem(r, "degenerate");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(d, "flag")));
	CHECK_CONTAINS(kf_json_str(d, "why"),
		       "output 'y' is within its tolerance of zero in every "
		       "trial (|values| <= 1e-05)");
	cJSON_Delete(r);
	/* An ordinary task is not. */
	r = run(ROWSUM, CAND("same"), &o);
	CHECK_STR(status(r), "ok");
	CHECK(cJSON_IsFalse(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "degenerate"), "flag")));
	cJSON_Delete(r);
}

static void test_eval_trials_are_reproducible_from_seed(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.seed = 12345;
	cJSON *a = run(ROWSUM, CAND("hardcode"), &o);
	cJSON *b = run(ROWSUM, CAND("hardcode"), &o);
	CHECK_STR(reason(a), reason(b));
	CHECK_CONTAINS(reason(a), "seed 12346");
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_eval_bad_task_is_an_error_naming_the_field(void)
{
	use_tmp_cache();
	char *dir = kf_path_join(kf_test_tmpdir(), "bad");
	char *path = kf_path_join(dir, "task.json");
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_mkdir_p(dir, &err) == 0);
	const char *text =
	    "{\"description\": \"d\", \"dims\": {\"N\": 8},"
	    " \"hidden_dims\": [{\"N\": 3}, {\"N\": 5}],"
	    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float33\","
	    " \"shape\": [\"N\"]}],"
	    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\","
	    " \"shape\": [\"N\"]}], \"flops\": \"N\", \"bytes\": \"N\"}";
	CHECK(kf_file_write_atomic(path, text, strlen(text), &err) == 0);
	struct kf_eval_opts o = quick();
	cJSON *res = NULL;
	int rc = kf_eval(dir, CAND("same"), &o, &res, &err);
	CHECK(rc == KF_EINVAL);
	CHECK(res == NULL);
	CHECK_CONTAINS(err.msg, "task.json: inputs[0].dtype");
	CHECK_CONTAINS(err.msg, "float33");
	free(dir);
	free(path);
}

static void test_eval_missing_candidate_is_an_error(void)
{
	struct kf_eval_opts o = quick();
	struct kf_err err = KF_ERR_INIT;
	cJSON *res = NULL;
	CHECK(kf_eval(ROWSUM, "/nonexistent/cand.c", &o, &res, &err) ==
	      KF_ENOENT);
	CHECK_CONTAINS(err.msg, "/nonexistent/cand.c");
}

static void test_eval_seed_is_random_by_default_and_recorded(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.seed = 0;
	cJSON *a = run(ROWSUM, CAND("same"), &o);
	cJSON *b = run(ROWSUM, CAND("same"), &o);
	const char *sa = kf_json_str(a, "seed"), *sb = kf_json_str(b, "seed");
	CHECK(sa && sb && strcmp(sa, "0") && strcmp(sa, sb));
	/* The trials use it: trial 0's seed is the recorded one. */
	const cJSON *t0 =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(a, "trials"), 0);
	CHECK_STR(kf_json_str(t0, "seed"), sa);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_eval_summary_median_and_interval(void)
{
	double x[9] = {5, 1, 9, 3, 7, 2, 8, 4, 6};
	struct kf_summary s;
	kf_summarize(x, 9, &s);
	CHECK(s.median == 5);
	CHECK(s.min == 1 && s.max == 9);
	CHECK(s.q1 == 3 && s.q3 == 7);
	CHECK(s.ci_lo <= 5 && s.ci_hi >= 5);
	CHECK(s.ci_lo >= 1 && s.ci_hi <= 9);
	double y[2] = {2, 4};
	kf_summarize(y, 2, &s);
	CHECK(s.median == 3);
}

#define SCALE "tests/fixtures/scale"

static void test_eval_lower_precision_within_tolerance_is_rejected(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(SCALE, SCALE "/candidates/fp16.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "precision");
	CHECK_CONTAINS(reason(r), "within the tolerance");
	cJSON_Delete(r);
	r = run(SCALE, SCALE "/candidates/same.c", &o);
	CHECK_STR(status(r), "ok");
	cJSON_Delete(r);
}

static void test_eval_write_past_the_end_is_rejected(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(SCALE, SCALE "/candidates/past_end.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "out_of_bounds");
	CHECK_CONTAINS(reason(r), "after output 'y' (the first at byte ");
	cJSON_Delete(r);
}

#define NOISE "tests/fixtures/noise"
#define LOOSE "tests/fixtures/loose"

static void test_eval_noise_around_zero_is_not_precision(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.time_cap_s = 0.5;
	/* Every bit of the noise differs from the reference's, every error
	 * is far below atol: the absolute floor keeps it from "precision",
	 * in trials and timed calls alike. */
	cJSON *r = run(NOISE, NOISE "/candidates/other_order.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s: %s", status(r), reason(r));
	cJSON_Delete(r);
}

#define GELU_TAIL "tests/fixtures/gelu_tail"

/* Outputs near zero are held to the bound alone: where gelu(x) is under
 * 1e-3 (x from -5.5 to -3.5) the float32 textbook form, as PyTorch's,
 * loses up to 0.5 |x| ulp(1) to 1 + tanh(u), thousands of times the
 * float64 reference's own noise on one element, and an accurate form
 * (gelu's fast.c) is as far from a float32 reference. On one to three
 * elements from the heavy and wide distributions both were rejected
 * "precision" in 2 of these seeds and in CI (trial 11 of seed
 * 2601353729210604 on gelu itself, fast.c, 2262 times the noise). */
static void test_eval_near_zero_float32_intermediates_are_not_precision(void)
{
	use_tmp_cache();
	static const char *const cands[] = {
	    GELU_TAIL "/candidates/textbook.c",
	    "tasks/activation/gelu/candidates/fast.c",
	    "tasks/activation/gelu/candidates/naive.c"};
	for (size_t c = 0; c < sizeof(cands) / sizeof(cands[0]); c++)
		for (uint64_t seed = 1; seed <= 3; seed++) {
			struct kf_eval_opts o = quick();
			o.seed = seed;
			o.trials = 300;
			cJSON *r = run(GELU_TAIL, cands[c], &o);
			CHECK_MSG(!strcmp(status(r), "ok"), "%s, seed %llu: %s",
				  cands[c], (unsigned long long)seed,
				  reason(r));
			cJSON_Delete(r);
		}
	struct kf_eval_opts o = quick();
	o.seed = 2601353729210604ull;
	o.trials = 12;
	cJSON *r = run("tasks/activation/gelu",
		       "tasks/activation/gelu/candidates/fast.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s", reason(r));
	cJSON_Delete(r);
}

static void test_eval_race_within_atol_is_nondeterministic(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(NOISE, NOISE "/candidates/race.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "nondeterministic");
	CHECK_CONTAINS(reason(r), "differs between two calls on the same "
				  "inputs");
	CHECK_CONTAINS(reason(r), "a race between threads or blocks, not "
				  "lower precision");
	cJSON_Delete(r);
}

static void test_eval_few_wrong_values_are_not_precision(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(LOOSE, LOOSE "/candidates/few_wrong.c", &o);
	CHECK_STR(status(r), "wrong_answer");
	CHECK_STR(kf_json_str(r, "check"), "wrong_values");
	CHECK_CONTAINS(reason(r), "a few elements hold wrong values");
	cJSON_Delete(r);
	/* Lower precision everywhere is named as such. */
	r = run(LOOSE, LOOSE "/candidates/bf16.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "precision");
	CHECK_CONTAINS(reason(r), "lower precision than the task demands");
	cJSON_Delete(r);
}

static void test_eval_lower_precision_only_when_timed_is_rejected(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.time_cap_s = 1;
	cJSON *r = run(SCALE, SCALE "/candidates/fp16_when_timed.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "precision");
	CHECK_CONTAINS(reason(r), "timing: pair ");
	cJSON_Delete(r);
	/* An honest kernel that sums in another order passes timing's
	 * precision check (rowsum: pairwise in float). */
	r = run(ROWSUM, CAND("pairwise"), &o);
	CHECK_MSG(!strcmp(status(r), "ok") ||
		      !strcmp(kf_json_str(r, "check"), "unaccounted_time"),
		  "%s: %s", status(r), reason(r));
	cJSON_Delete(r);
}

/* Timed outputs under KernelBench's protocol are held to the precision
 * check as under kforge's: float16 arithmetic switched on once the
 * trials' calls are counted out passed there (2026-12-06, the fourteenth
 * round's second finding). */
static void test_eval_kernelbench_protocol_checks_timed_precision(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.protocol = "kernelbench";
	cJSON *r = run(SCALE, SCALE "/candidates/fp16_when_timed.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "precision");
	CHECK_CONTAINS(reason(r), "timing (kernelbench): call ");
	CHECK_CONTAINS(reason(r), "lower precision than the task demands");
	cJSON_Delete(r);
	/* The same computation in float32 throughout passes, its check calls
	 * counted. */
	r = run(SCALE, SCALE "/candidates/same.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok") ||
		      !strcmp(kf_json_str(r, "check"), "unaccounted_time"),
		  "%s: %s", status(r), reason(r));
	if (!strcmp(status(r), "ok"))
		CHECK(kf_json_num(cJSON_GetObjectItem(r, "timing"),
				  "check_calls", 0) == 4);
	cJSON_Delete(r);
}

#define LAYERNORM "tests/fixtures/layernorm"

/*
 * Timed inputs are one base rotated per pair with few fresh values, so a
 * candidate can tell them from the trials' by a value it saw in the call
 * before (layernorm_rsqrt_when_seen: the largest value of x, bit for bit).
 * Exact on the trials and on check calls drawn like them, it used a 12-bit
 * reciprocal square root on timed pairs alone, about 6e-5 of the norm:
 * within the 1e-4 bound, and under the timed outputs' yardstick, the
 * trials' largest noise (rows of mean 30), so it passed (the fourteenth
 * round's first finding). Check calls drawn as the timed calls' inputs
 * are, which it cannot tell apart, meet the approximation and judge it by
 * the noise of their own inputs, under both protocols; an honest kernel
 * summing in another order passes them.
 */
static void test_eval_check_calls_drawn_as_timed_inputs(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.time_cap_s = 1;
	static const char *const protocols[] = {"kforge", "kernelbench"};
	for (int i = 0; i < 2; i++) {
		o.protocol = protocols[i];
		cJSON *r = run(LAYERNORM,
			       "redteam/host/layernorm_rsqrt_when_seen.c", &o);
		/* Where every batch's base inputs are the fixture's rows of
		 * mean 30, the estimate is within the reference's own float
		 * noise and no check can see it (nor does it gain: 0.54x);
		 * the bases and check calls are drawn per evaluation, and
		 * about 3 in 100 evaluations drew so (measured). A second
		 * evaluation draws again. */
		if (!strcmp(status(r), "ok")) {
			cJSON_Delete(r);
			r = run(LAYERNORM,
				"redteam/host/layernorm_rsqrt_when_seen.c", &o);
		}
		CHECK_STR(status(r), "rejected");
		CHECK_STR(kf_json_str(r, "check"), "precision");
		CHECK_CONTAINS(reason(r),
			       i ? "timing (kernelbench): check call before "
				   "call "
				 : "timing: check call ");
		CHECK_CONTAINS(reason(r), ", on inputs drawn as the timed "
					  "calls' are (seed ");
		CHECK_CONTAINS(reason(r), "dists x=normal weight=");
		CHECK_CONTAINS(reason(r), "; the timed calls' base inputs "
					  "rotated, with fresh values): output "
					  "'y' is within the tolerance");
		CHECK_CONTAINS(reason(r), "times the reference's own float "
					  "noise on the same inputs");
		cJSON_Delete(r);
		r = run(LAYERNORM, "redteam/host/honest_layernorm_pairwise.c",
			&o);
		CHECK_MSG(!strcmp(status(r), "ok") ||
			      !strcmp(kf_json_str(r, "check"),
				      "unaccounted_time"),
			  "%s: %s: %s", protocols[i], status(r), reason(r));
		if (!strcmp(status(r), "ok")) {
			const cJSON *tm = cJSON_GetObjectItem(r, "timing");
			double n = kf_json_num(tm, "check_calls", 0);
			CHECK(n >= 4);
			/* Those before a reference-first pair called the
			 * reference first too (kforge's protocol; KernelBench's
			 * times one side at a time). */
			double after = kf_json_num(
			    tm, "check_calls_after_reference", -1);
			CHECK_MSG(i == 0 ? after >= 0 && after <= n
					 : after <= 0,
				  "%g of %g", after, n);
		}
		cJSON_Delete(r);
	}
}

static void test_eval_write_far_past_the_end_is_rejected(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	/* 4 KiB past the end: beyond any fixed guard zone, in the slack
	 * before the next buffer or the slot's end, all of it checked. */
	cJSON *r = run(SCALE, SCALE "/candidates/far_past_end.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "out_of_bounds");
	CHECK_CONTAINS(reason(r), "after output 'y' (the first at byte 4096 "
				  "past its end)");
	cJSON_Delete(r);
	/* Reading up to the last element with vector loads is fine. */
	r = run(SCALE, SCALE "/candidates/vector_reads.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s: %s", status(r), reason(r));
	cJSON_Delete(r);
}

static void test_eval_hidden_dims_drawn_and_recorded(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(NOISE, NOISE "/candidates/other_order.c", &o);
	const cJSON *tj = cJSON_GetObjectItem(r, "task");
	const cJSON *h = cJSON_GetObjectItem(tj, "hidden_dims");
	CHECK(kf_json_num(tj, "hidden_drawn", 0) == 9);
	CHECK(cJSON_GetArraySize(h) == 9);
	/* The first drawn set is the edge, N = 1; the trials ran there. */
	CHECK(kf_json_num(cJSON_GetArrayItem(h, 0), "N", 0) == 1);
	double n1 = kf_json_num(cJSON_GetArrayItem(h, 1), "N", 0);
	CHECK(n1 >= 1 && n1 <= 1000);
	bool ran = false;
	const cJSON *t;
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(r, "trials")) ran =
	    ran || kf_json_num(cJSON_GetObjectItem(t, "dims"), "N", 0) == n1;
	CHECK(ran);
	cJSON_Delete(r);
	/* Another seed, other hidden sets. */
	o.seed = 2;
	r = run(NOISE, NOISE "/candidates/other_order.c", &o);
	h = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "task"), "hidden_dims");
	CHECK(kf_json_num(cJSON_GetArrayItem(h, 1), "N", 0) != n1 ||
	      kf_json_num(cJSON_GetArrayItem(h, 2), "N", 0) !=
		  kf_json_num(cJSON_GetArrayItem(h, 2), "N", -1));
	cJSON_Delete(r);
}

#define RANGES "tests/fixtures/ranges"

/* Kernels wrong only at multiples of 128 other than the timing size, or
 * only within the top 1 % of the hidden range, meet such a size in every
 * evaluation: wrong_answer whatever the seed; the honest one passes. */
static void test_eval_structured_sizes_are_drawn_every_evaluation(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	for (uint64_t seed = 1; seed <= 3; seed++) {
		o.seed = seed * 1000003;
		cJSON *r = run(RANGES, RANGES "/candidates/pow2_wrong.c", &o);
		CHECK_MSG(!strcmp(status(r), "wrong_answer"), "seed %llu: %s",
			  (unsigned long long)o.seed, status(r));
		cJSON_Delete(r);
		r = run(RANGES, RANGES "/candidates/top_wrong.c", &o);
		CHECK_MSG(!strcmp(status(r), "wrong_answer"), "seed %llu: %s",
			  (unsigned long long)o.seed, status(r));
		cJSON_Delete(r);
	}
	cJSON *r = run(RANGES, RANGES "/candidates/same.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s: %s", status(r), reason(r));
	cJSON_Delete(r);
}

static void test_eval_every_dist_meets_the_timing_dims(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.trials = 5; /* raised to cover every pair of dim set and dist */
	cJSON *r = run("tasks/normalization/softmax",
		       "tasks/normalization/softmax/candidates/fast.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s: %s", status(r), reason(r));
	/* Seven dists of x, ten dim sets: 70 trials, each dist at the
	 * timing dims. */
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(r, "trials")) == 70);
	static const char *const kinds[] = {"normal", "uniform",  "heavy",
					    "large",  "negative", "ties"};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		bool timed = false;
		const cJSON *t;
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(r, "trials"))
		{
			/* "large" or "large(scale=..., mean=...)". */
			const char *l =
			    kf_json_str(cJSON_GetObjectItem(t, "dists"), "x");
			size_t n = strlen(kinds[k]);
			timed =
			    timed ||
			    (!cJSON_IsTrue(cJSON_GetObjectItem(t, "hidden")) &&
			     !strncmp(l, kinds[k], n) &&
			     (l[n] == '\0' || l[n] == '('));
		}
		CHECK_MSG(timed, "no trial at the timing dims with %s",
			  kinds[k]);
	}
	cJSON_Delete(r);
}

static void test_eval_changed_fp_environment_is_rejected(void)
{
#if !defined(__x86_64__)
	SKIP("MXCSR is an x86 register");
#endif
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(SCALE, SCALE "/candidates/ftz.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "global_state");
	CHECK_CONTAINS(reason(r), "mxcsr 0x9fc0");
	cJSON_Delete(r);
}

static void test_eval_fp_environment_changed_at_load_is_rejected(void)
{
#if !defined(__x86_64__)
	SKIP("MXCSR is an x86 register");
#endif
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(SCALE, SCALE "/candidates/ctor_ftz.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "global_state");
	cJSON_Delete(r);
}

/* The x87 control word is global state like MXCSR: left changed it is
 * rejected, naming it; changed and put back it is not. */
static void test_eval_changed_x87_control_word_is_rejected(void)
{
#if !defined(__x86_64__)
	SKIP("the x87 control word is checked on x86-64");
#endif
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(SCALE, SCALE "/candidates/x87_control.c", &o);
	CHECK_MSG(!strcmp(status(r), "rejected"), "%s: %s", status(r),
		  reason(r));
	CHECK_STR(kf_json_str(r, "check"), "global_state");
	CHECK_CONTAINS(reason(r), "x87 control word 0x007f");
	CHECK_CONTAINS(reason(r), "was rounding 0, mxcsr 0x1f80, x87 control "
				  "word 0x037f");
	cJSON_Delete(r);
	r = run(SCALE, SCALE "/candidates/x87_restored.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s: %s", status(r), reason(r));
	cJSON_Delete(r);
}

static void test_eval_output_cached_by_pointer_fails_when_timed(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.time_cap_s = 1;
	cJSON *r = run(SCALE, SCALE "/candidates/by_pointer.c", &o);
	CHECK_STR(status(r), "wrong_answer");
	/* Caught in the trials when a freed buffer comes back at the same
	 * address with other inputs, else in timing. */
	const char *ck = kf_json_str(r, "check");
	CHECK(ck && (!strcmp(ck, "mismatch") || !strcmp(ck, "timed_output")));
	cJSON_Delete(r);
}

static void test_eval_faster_than_the_roofline_is_rejected(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	o.no_timing = false;
	o.time_cap_s = 0.5;
	cJSON *r = run(SCALE, SCALE "/candidates/same.c", &o);
	CHECK_STR(status(r), "ok");
	cJSON_Delete(r);
	/* Peaks a thousand times too low (a probe on a very busy machine):
	 * before calling anything implausible the peaks are measured again,
	 * the candidate passes, and the cache holds the new ones. */
	char *dir = kf_path_join(getenv("KFORGE_CACHE"), "peaks");
	char *cmd =
	    kf_xasprintf("sed -i 's/\"bytes_per_s\":.*/\"bytes_per_s\": "
			 "1e3,/; s/\"flops_per_s\":.*/\"flops_per_s\": "
			 "1e3,/' %s/host-*.json",
			 dir);
	CHECK(system(cmd) == 0);
	r = run(SCALE, SCALE "/candidates/same.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s: %s", status(r), reason(r));
	CHECK(kf_json_num(cJSON_GetObjectItem(r, "roofline"),
			  "peak_bytes_per_s", 0) > 1e6);
	cJSON_Delete(r);
	/* A task that claims a million times the work it does: every
	 * honest time is faster than the hardware allows. */
	r = run("tests/fixtures/overclaim", SCALE "/candidates/same.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "implausible");
	CHECK_CONTAINS(reason(r), "faster than the roofline allows");
	cJSON_Delete(r);
	free(cmd);
	free(dir);
}

static void test_eval_inline_system_call_is_stopped_by_the_sandbox(void)
{
#if !defined(__x86_64__)
	SKIP("the sandbox is written for x86-64");
#endif
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(SCALE, SCALE "/candidates/raw_socket.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "sandbox");
	CHECK_CONTAINS(kf_json_str(cJSON_GetObjectItem(r, "worker"), "exit"),
		       "SIGSYS");
	cJSON_Delete(r);
	r = run(SCALE, SCALE "/candidates/same.c", &o);
	CHECK_STR(status(r), "ok");
	cJSON_Delete(r);
}

/* A constructor that asks, with an inline system call, to run on every
 * core cannot leave the core the worker pins and flushes: its call fails,
 * the runner stays on one core (the candidate is right only there), and
 * reading the affinity, as honest code may, is allowed: ok. */
static void test_eval_candidate_cannot_change_its_cpu_affinity(void)
{
#if !defined(__x86_64__)
	SKIP("the sandbox is written for x86-64");
#endif
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) < 2)
		SKIP("this process may run on one core only");
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(SCALE, SCALE "/candidates/affinity.c", &o);
	CHECK_MSG(!strcmp(status(r), "ok"), "%s: %s", status(r), reason(r));
	cJSON_Delete(r);
}

static void test_eval_threads_are_rejected_before_running(void)
{
	use_tmp_cache();
	struct kf_eval_opts o = quick();
	cJSON *r = run(SCALE, SCALE "/candidates/threads.c", &o);
	CHECK_STR(status(r), "rejected");
	CHECK_STR(kf_json_str(r, "check"), "link_policy");
	CHECK_CONTAINS(reason(r), "pthread_create (threads)");
	/* It never ran: no worker was started. */
	CHECK(cJSON_GetObjectItem(r, "trials") == NULL);
	cJSON_Delete(r);
}

KF_TESTS(eval) = {
    KF_TEST(test_eval_inline_system_call_is_stopped_by_the_sandbox),
    KF_TEST(test_eval_candidate_cannot_change_its_cpu_affinity),
    KF_TEST(test_eval_threads_are_rejected_before_running),
    KF_TEST(test_eval_lower_precision_within_tolerance_is_rejected),
    KF_TEST(test_eval_write_past_the_end_is_rejected),
    KF_TEST(test_eval_noise_around_zero_is_not_precision),
    KF_TEST(test_eval_near_zero_float32_intermediates_are_not_precision),
    KF_TEST(test_eval_race_within_atol_is_nondeterministic),
    KF_TEST(test_eval_few_wrong_values_are_not_precision),
    KF_TEST(test_eval_lower_precision_only_when_timed_is_rejected),
    KF_TEST(test_eval_check_calls_drawn_as_timed_inputs),
    KF_TEST(test_eval_write_far_past_the_end_is_rejected),
    KF_TEST(test_eval_hidden_dims_drawn_and_recorded),
    KF_TEST(test_eval_every_dist_meets_the_timing_dims),
    KF_TEST(test_eval_structured_sizes_are_drawn_every_evaluation),
    KF_TEST(test_eval_changed_fp_environment_is_rejected),
    KF_TEST(test_eval_fp_environment_changed_at_load_is_rejected),
    KF_TEST(test_eval_changed_x87_control_word_is_rejected),
    KF_TEST(test_eval_output_cached_by_pointer_fails_when_timed),
    KF_TEST(test_eval_faster_than_the_roofline_is_rejected),
    KF_TEST(test_eval_honest_candidate_passes_with_details),
    KF_TEST(test_eval_segfault_is_runtime_error),
    KF_TEST(test_eval_abort_is_runtime_error),
    KF_TEST(test_eval_exit_in_candidate_is_rejected_by_link_policy),
    KF_TEST(test_eval_infinite_loop_is_timeout),
    KF_TEST(test_eval_constructor_spin_is_load_timeout),
    KF_TEST(test_eval_constructor_sleep_is_load_timeout),
    KF_TEST(test_eval_memory_exhaustion_is_runtime_error),
    KF_TEST(test_eval_runner_memory_limit),
    KF_TEST(test_eval_partial_output_is_wrong_answer),
    KF_TEST(test_eval_input_mutation_is_rejected),
    KF_TEST(test_eval_nonzero_return_is_runtime_error),
    KF_TEST(test_eval_nondeterminism_is_rejected),
    KF_TEST(test_eval_hardcoded_shape_fails_on_hidden_dims),
    KF_TEST(test_eval_compile_error_names_file_and_line),
    KF_TEST(test_eval_missing_entry_is_load_error),
    KF_TEST(test_eval_candidate_output_does_not_break_frames),
    KF_TEST(test_eval_trials_cover_each_dimset_with_several_dists),
    KF_TEST(test_eval_timed_calls_are_checked),
    KF_TEST(test_eval_timing_reports_speedup_and_roofline),
    KF_TEST(test_eval_kernelbench_protocol_reports_means),
    KF_TEST(test_eval_text_of_a_result_stopped_while_timed),
    KF_TEST(test_eval_text_says_calls_identical_only_when_they_were),
    KF_TEST(test_eval_both_protocols_side_by_side),
    KF_TEST(test_eval_kernelbench_protocol_still_checks_outputs),
    KF_TEST(test_eval_kernelbench_protocol_checks_timed_precision),
    KF_TEST(test_eval_unknown_protocol_is_an_error),
    KF_TEST(test_eval_degenerate_task_is_flagged),
    KF_TEST(test_eval_near_zero_task_is_flagged),
    KF_TEST(test_eval_trials_are_reproducible_from_seed),
    KF_TEST(test_eval_bad_task_is_an_error_naming_the_field),
    KF_TEST(test_eval_missing_candidate_is_an_error),
    KF_TEST(test_eval_seed_is_random_by_default_and_recorded),
    KF_TEST(test_eval_summary_median_and_interval),
    KF_TESTS_END,
};
