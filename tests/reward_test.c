/*
 * reward_test.c: every reward design, GRPO advantage, multi-turn anchor,
 * pruning decision and the retry buffer against values worked out by hand,
 * and the rule that each correct kernel scores above each incorrect one.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kforge/eval.h>
#include <kforge/reward.h>

#include "harness.h"

/* Values are compared to 1e-9, more than the 6 digits written below. */
#define CHECK_NEAR(got, want)                                                  \
	do {                                                                   \
		double g_ = (got), w_ = (want);                                \
		CHECK_MSG(fabs(g_ - w_) <= 1e-9, "got %.12g, want %.12g", g_,  \
			  w_);                                                 \
	} while (0)

static struct kf_reward_item item(enum kf_status st, double speedup, double q)
{
	struct kf_reward_item it = KF_REWARD_ITEM_INIT;
	it.status = st;
	it.compiled = st != KF_STATUS_COMPILE_ERROR;
	it.speedup = speedup;
	it.pass_fraction = q;
	return it;
}

static struct kf_reward_item ok(double speedup)
{
	return item(KF_STATUS_OK, speedup, 1.0);
}

static struct kf_reward_item wrong(double q)
{
	return item(KF_STATUS_WRONG_ANSWER, NAN, q);
}

static struct kf_reward_item infra(void)
{
	return item(KF_STATUS_INFRA_ERROR, 2.0, 1.0);
}

/* Sets up a design; params is JSON text or NULL. */
static struct kf_reward design(const char *name, const char *params)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward r = KF_REWARD_INIT;
	cJSON *p = params ? cJSON_Parse(params) : NULL;
	CHECK(!params || p);
	int rc = kf_reward_init(&r, name, p, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	cJSON_Delete(p);
	return r;
}

static void score(const char *name, const char *params,
		  const struct kf_reward_item *items, size_t n, double *out)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward r = design(name, params);
	int rc = kf_reward_score(&r, items, n, out, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
}

/* The error message of setting up name with params (which must fail). */
static void init_fails(const char *name, const char *params, const char *want)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward r = KF_REWARD_INIT;
	cJSON *p = params ? cJSON_Parse(params) : NULL;
	CHECK(!params || p);
	CHECK(kf_reward_init(&r, name, p, &err) == KF_EINVAL);
	CHECK_STR(err.msg, want);
	CHECK(r.ops == NULL); /* untouched */
	cJSON_Delete(p);
}

static int from_result(const char *json, int planned, struct kf_reward_item *it,
		       struct kf_err *err)
{
	cJSON *r = cJSON_Parse(json);
	CHECK(r != NULL);
	int rc = kf_reward_item_from_result(r, planned, it, err);
	cJSON_Delete(r);
	return rc;
}

static void test_reward_item_from_a_correct_result(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward_item it;
	const char *json =
	    "{\"status\": \"ok\", \"reason\": null,"
	    " \"compile\": {\"candidate\": {\"ok\": true}},"
	    " \"trials\": [{\"passed\": true}, {\"passed\": true},"
	    "  {\"passed\": true}, {\"passed\": true}, {\"passed\": true},"
	    "  {\"passed\": true}],"
	    " \"timing\": {\"speedup\": {\"n\": 24, \"median\": 1.25}}}";
	CHECK_MSG(from_result(json, 6, &it, &err) == 0, "%s", err.msg);
	CHECK(it.status == KF_STATUS_OK);
	CHECK(it.compiled);
	CHECK_NEAR(it.pass_fraction, 1.0);
	CHECK_NEAR(it.speedup, 1.25);
	CHECK(kf_reward_item_correct(&it));
	CHECK(kf_reward_item_scored(&it));
	CHECK_NEAR(kf_reward_item_speedup(&it), 1.25);
}

static void test_reward_item_from_a_failed_result(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward_item it;
	/* Trial 2 failed: the evaluation stopped there. */
	const char *json =
	    "{\"status\": \"wrong_answer\", \"check\": \"mismatch\","
	    " \"compile\": {\"candidate\": {\"ok\": true}},"
	    " \"trials\": [{\"passed\": true}, {\"passed\": true},"
	    "  {\"passed\": false}]}";
	CHECK_MSG(from_result(json, 6, &it, &err) == 0, "%s", err.msg);
	CHECK(it.status == KF_STATUS_WRONG_ANSWER);
	CHECK(it.compiled);
	CHECK_NEAR(it.pass_fraction, 2.0 / 6.0); /* 2 of 6 planned */
	CHECK(isnan(it.speedup));		 /* never timed */
	CHECK_NEAR(kf_reward_item_speedup(&it), 1.0);
	CHECK(!kf_reward_item_correct(&it));
	/* Without the planned count, q is over the trials run: 2 / 3. */
	CHECK(from_result(json, 0, &it, &err) == 0);
	CHECK_NEAR(it.pass_fraction, 2.0 / 3.0);

	const char *cerr = "{\"status\": \"compile_error\","
			   " \"compile\": {\"candidate\": {\"ok\": false}}}";
	CHECK(from_result(cerr, 6, &it, &err) == 0);
	CHECK(it.status == KF_STATUS_COMPILE_ERROR);
	CHECK(!it.compiled);
	CHECK_NEAR(it.pass_fraction, 0.0);

	const char *lost = "{\"status\": \"infra_error\", \"check\": \"spawn\","
			   " \"compile\": {\"candidate\": {\"ok\": true}}}";
	CHECK(from_result(lost, 6, &it, &err) == 0);
	CHECK(!kf_reward_item_scored(&it));
}

static void test_reward_item_from_result_names_what_is_wrong(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward_item it = ok(3.0), more = ok(1.0);
	CHECK(from_result("[1]", 6, &it, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "result: not a JSON object");
	CHECK(from_result("{\"compile\": {\"candidate\": {\"ok\": true}}}", 6,
			  &it, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "result: status is missing or not a string");
	CHECK(from_result("{\"status\": \"fast\", \"compile\":"
			  " {\"candidate\": {\"ok\": true}}}",
			  6, &it, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "result: unknown status 'fast'");
	CHECK(from_result("{\"status\": \"ok\"}", 6, &it, &err) == KF_EINVAL);
	CHECK_STR(err.msg,
		  "result: compile.candidate.ok is missing or not a boolean");
	CHECK(from_result("{\"status\": \"ok\", \"compile\": {\"candidate\":"
			  " {\"ok\": true}}, \"trials\": 6}",
			  6, &it, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "result: trials is not an array");
	/* More trials than asked for (the engine covers every distribution
	 * at every dim set) are the plan: three passed of three. */
	CHECK(from_result("{\"status\": \"ok\", \"compile\": {\"candidate\":"
			  " {\"ok\": true}}, \"trials\": [{\"passed\": true},"
			  " {\"passed\": true}, {\"passed\": true}]}",
			  2, &more, &err) == 0);
	CHECK_NEAR(more.pass_fraction, 1.0);
	CHECK(from_result("{}", -1, &it, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "result: trials planned is -1, below 0");
	/* A failed call leaves the item as it was. */
	CHECK_NEAR(it.speedup, 3.0);
}

/* Real results of the evaluator, so that the fields read are the ones it
 * writes. */
static void test_reward_item_from_real_results(void)
{
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	free(cache);
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	o.seed = 1;
	o.include_dir = "include";
	o.time_cap_s = 0.2;
	o.min_pairs = 5;
	o.mem_limit_bytes = 1ull << 30;
	struct kf_err err = KF_ERR_INIT;
	cJSON *res = NULL;
	int rc =
	    kf_eval("tests/fixtures/rowsum",
		    "tests/fixtures/rowsum/candidates/same.c", &o, &res, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	struct kf_reward_item it;
	CHECK_MSG(kf_reward_item_from_result(res, o.trials, &it, &err) == 0,
		  "%s", err.msg);
	CHECK(it.status == KF_STATUS_OK && it.compiled);
	CHECK_NEAR(it.pass_fraction, 1.0);
	const cJSON *med = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(res, "timing"), "speedup"),
	    "median");
	CHECK(cJSON_IsNumber(med) && med->valuedouble > 0);
	CHECK(it.speedup == med->valuedouble);
	cJSON_Delete(res);

	/* hardcode.c is right at the timing dims only: trial 0 passes and
	 * trial 1 (hidden dims) fails, so q = 1 / 6. */
	o.no_timing = true;
	rc = kf_eval("tests/fixtures/rowsum",
		     "tests/fixtures/rowsum/candidates/hardcode.c", &o, &res,
		     &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK_MSG(kf_reward_item_from_result(res, o.trials, &it, &err) == 0,
		  "%s", err.msg);
	CHECK(it.status == KF_STATUS_WRONG_ANSWER && it.compiled);
	CHECK_NEAR(it.pass_fraction, 1.0 / 6.0);
	CHECK(isnan(it.speedup));
	double r;
	score("musacoder", NULL, &it, 1, &r);
	CHECK_NEAR(r, -0.5 + 0.5 / 6.0); /* -0.416667 */
	cJSON_Delete(res);

	rc = kf_eval("tests/fixtures/rowsum",
		     "tests/fixtures/rowsum/candidates/syntax.c", &o, &res,
		     &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(kf_reward_item_from_result(res, o.trials, &it, &err) == 0);
	CHECK(it.status == KF_STATUS_COMPILE_ERROR && !it.compiled);
	CHECK_NEAR(it.pass_fraction, 0.0);
	score("musacoder", NULL, &it, 1, &r);
	CHECK_NEAR(r, -1.0);
	cJSON_Delete(res);
}

static void test_reward_designs_are_found_by_name(void)
{
	static const char *const names[] = {"log_speedup", "cuda_l1",
					    "musacoder", "leap_rank"};
	for (size_t i = 0; i < 4; i++) {
		CHECK(kf_reward_at(i) != NULL);
		CHECK_STR(kf_reward_at(i)->name, names[i]);
		CHECK(kf_reward_find(names[i]) == kf_reward_at(i));
		CHECK(kf_reward_at(i)->version == KF_REWARD_OPS_VERSION);
	}
	CHECK(kf_reward_at(4) == NULL);
	CHECK(kf_reward_find("grpo") == NULL);
	CHECK(kf_reward_find(NULL) == NULL);
	init_fails("speedup", NULL,
		   "unknown reward 'speedup' (known: log_speedup, cuda_l1, "
		   "musacoder, leap_rank)");
}

static void test_reward_parameters_have_defaults_and_parse(void)
{
	struct kf_reward r = design("musacoder", NULL);
	CHECK_NEAR(kf_reward_param(&r, "lambda"), 0.5);
	CHECK_NEAR(kf_reward_param(&r, "s_max"), 3.0);
	CHECK(isnan(kf_reward_param(&r, "clip")));
	r = design("musacoder", "{\"lambda\": 2}");
	CHECK_NEAR(kf_reward_param(&r, "lambda"), 2.0);
	CHECK_NEAR(kf_reward_param(&r, "s_max"), 3.0);
	r = design("cuda_l1", "{}");
	CHECK_NEAR(kf_reward_param(&r, "clip"), 1.5);
	CHECK_NEAR(kf_reward_param(&r, "separation"), 1.0);
	r = design("log_speedup", NULL);
	CHECK_NEAR(kf_reward_param(&r, "clip"), 3.0);
	r = design("leap_rank", "{\"tie_tol\": 0}");
	CHECK_NEAR(kf_reward_param(&r, "tie_tol"), 0.0);
	cJSON *j = kf_reward_json(&r);
	char *s = kf_json_print(j);
	CHECK_STR(s, "{\"name\":\"leap_rank\",\"params\":{\"tie_tol\":0}}");
	free(s);
	cJSON_Delete(j);
}

static void test_reward_parameter_errors_name_the_key(void)
{
	init_fails("musacoder", "{\"lamda\": 1}",
		   "musacoder: unknown parameter 'lamda' (known: lambda, "
		   "s_max)");
	init_fails("musacoder", "{\"lambda\": \"1\"}",
		   "musacoder: parameter 'lambda' must be a finite number");
	init_fails("musacoder", "{\"lambda\": null}",
		   "musacoder: parameter 'lambda' must be a finite number");
	init_fails("musacoder", "{\"lambda\": -1}",
		   "musacoder: parameter 'lambda' must be between 0 and 1000, "
		   "got -1");
	init_fails("cuda_l1", "{\"clip\": 0}",
		   "cuda_l1: parameter 'clip' must be between 1e-06 and 1000, "
		   "got 0");
	init_fails("leap_rank", "{\"tie_tol\": 1.5}",
		   "leap_rank: parameter 'tie_tol' must be between 0 and 1, "
		   "got 1.5");
	init_fails("log_speedup", "{\"clip\": 1, \"clip\": 2}",
		   "log_speedup: parameter 'clip' is given twice");
	init_fails("log_speedup", "[1, 2]",
		   "log_speedup: parameters must be a JSON object");
	init_fails("cuda_l1", "1.5",
		   "cuda_l1: parameters must be a JSON object");
}

static void test_reward_log_speedup_values(void)
{
	struct kf_reward_item g[] = {
	    ok(2.0),	ok(0.5),
	    ok(100.0),	ok(0.01),
	    wrong(0.9), ok(NAN),
	    infra(),	ok(INFINITY),
	    ok(-3.0),	item(KF_STATUS_REJECTED, 50.0, 1.0),
	};
	double r[10];
	score("log_speedup", NULL, g, 10, r);
	CHECK_NEAR(r[0], 0.693147180560);  /* ln 2 */
	CHECK_NEAR(r[1], -0.693147180560); /* ln 0.5 */
	CHECK_NEAR(r[2], 3.0);		   /* ln 100 = 4.61, clipped at 3 */
	CHECK_NEAR(r[3], -3.0);		   /* ln 0.01 = -4.61, clipped */
	CHECK_NEAR(r[4], -4.0);		   /* -clip - separation = -3 - 1 */
	CHECK_NEAR(r[5], 0.0);		   /* no speedup: counts as 1 */
	CHECK(isnan(r[6]));		   /* infra_error: no reward */
	CHECK_NEAR(r[7], 0.0);		   /* an infinite ratio counts as 1 */
	CHECK_NEAR(r[8], 0.0);		   /* so does a negative one */
	CHECK_NEAR(r[9], -4.0);		   /* a hack's speedup is not read */

	/* clip 1, separation 0.5: e^2 clips at 1; incorrect -1.5. */
	score("log_speedup", "{\"clip\": 1, \"separation\": 0.5}", g, 5, r);
	CHECK_NEAR(r[0], 0.693147180560);
	CHECK_NEAR(r[2], 1.0);
	CHECK_NEAR(r[3], -1.0);
	CHECK_NEAR(r[4], -1.5);
}

static void test_reward_cuda_l1_values(void)
{
	/* Correct speedups 1, 2, 3: mean 2, population std
	 * sqrt((1 + 0 + 1) / 3) = 0.816497, z = -1.224745, 0, 1.224745. */
	struct kf_reward_item g[] = {ok(1.0), wrong(0.5), ok(2.0), infra(),
				     ok(3.0)};
	double r[5];
	score("cuda_l1", NULL, g, 5, r);
	CHECK_NEAR(r[0], -1.224744871392);
	CHECK_NEAR(r[1], -2.5); /* -clip - separation = -1.5 - 1 */
	CHECK_NEAR(r[2], 0.0);
	CHECK(isnan(r[3]));
	CHECK_NEAR(r[4], 1.224744871392);

	/* 1, 1, 1, 1, 5: mean 9/5 = 1.8; squares 4 * 0.64 + 3.2^2 = 12.8;
	 * std sqrt(12.8 / 5) = 1.6; z = -0.8/1.6 = -0.5 and 3.2/1.6 = 2,
	 * clipped to 1.5. */
	struct kf_reward_item h[] = {ok(1), ok(1), ok(1), ok(1), ok(5)};
	score("cuda_l1", NULL, h, 5, r);
	for (int i = 0; i < 4; i++)
		CHECK_NEAR(r[i], -0.5);
	CHECK_NEAR(r[4], 1.5);
	/* With clip 3 the 2 stays; incorrect would be -3 - 0.25. */
	score("cuda_l1", "{\"clip\": 3, \"separation\": 0.25}", h, 5, r);
	CHECK_NEAR(r[4], 2.0);
	struct kf_reward_item w = wrong(0);
	score("cuda_l1", "{\"clip\": 3, \"separation\": 0.25}", &w, 1, r);
	CHECK_NEAR(r[0], -3.25);
}

static void test_reward_cuda_l1_edge_cases(void)
{
	double r[4] = {7, 7, 7, 7};
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward d = design("cuda_l1", NULL);
	/* An empty group scores nothing and touches nothing. */
	CHECK(kf_reward_score(&d, NULL, 0, r, &err) == 0);
	CHECK(r[0] == 7);
	/* A group of one: std 0, so z = 0. */
	struct kf_reward_item one = ok(4.0);
	score("cuda_l1", NULL, &one, 1, r);
	CHECK(r[0] == 0.0);
	/* Equal speedups: exactly 0, not rounding noise over a tiny std. */
	struct kf_reward_item eq[] = {ok(1.1), ok(1.1), ok(1.1), wrong(0)};
	score("cuda_l1", NULL, eq, 4, r);
	CHECK(r[0] == 0.0 && r[1] == 0.0 && r[2] == 0.0);
	CHECK_NEAR(r[3], -2.5);
	/* All failed. */
	struct kf_reward_item bad[] = {wrong(0), wrong(1),
				       item(KF_STATUS_TIMEOUT, NAN, 0)};
	score("cuda_l1", NULL, bad, 3, r);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(r[i], -2.5);
	/* NaN and infinite speedups count as 1: s = 1, 1, 3; mean 5/3;
	 * squares 4/9 + 4/9 + 16/9 = 24/9; std sqrt(8/9) = 0.942809;
	 * z = -0.707107, -0.707107, 1.414214. */
	struct kf_reward_item odd[] = {ok(NAN), ok(INFINITY), ok(3.0)};
	score("cuda_l1", NULL, odd, 3, r);
	CHECK_NEAR(r[0], -0.707106781187);
	CHECK_NEAR(r[1], -0.707106781187);
	CHECK_NEAR(r[2], 1.414213562373);
	/* Speedups are held within [1e-6, 1e6]: 1e300 counts as 1e6, so
	 * the statistics stay finite; two values give z = +-1. */
	struct kf_reward_item huge[] = {ok(1e300), ok(1e-300)};
	CHECK(kf_reward_item_speedup(&huge[0]) == 1e6);
	CHECK(kf_reward_item_speedup(&huge[1]) == 1e-6);
	score("cuda_l1", NULL, huge, 2, r);
	CHECK_NEAR(r[0], 1.0);
	CHECK_NEAR(r[1], -1.0);
	/* Only infra errors: nothing scored. */
	struct kf_reward_item lost[] = {infra(), infra()};
	score("cuda_l1", NULL, lost, 2, r);
	CHECK(isnan(r[0]) && isnan(r[1]));
}

static void test_reward_musacoder_values(void)
{
	struct kf_reward_item g[] = {
	    ok(1.8),
	    ok(0.7),
	    ok(10.0),
	    wrong(0.5),
	    item(KF_STATUS_COMPILE_ERROR, NAN, 0),
	    item(KF_STATUS_RUNTIME_ERROR, NAN, 0),
	    item(KF_STATUS_REJECTED, 3.0, 1.0),
	    item(KF_STATUS_TIMEOUT, NAN, 2.0 / 6.0),
	    wrong(1.0),
	    wrong(NAN),
	    wrong(1.7),
	    infra(),
	    ok(NAN),
	};
	double r[13];
	score("musacoder", NULL, g, 13, r);
	CHECK_NEAR(r[0], 1.4);	 /* 1 + 0.5 * min(max(0.8, 0), 3) */
	CHECK_NEAR(r[1], 1.0);	 /* 1 + 0.5 * max(-0.3, 0) */
	CHECK_NEAR(r[2], 2.5);	 /* 1 + 0.5 * min(9, 3) */
	CHECK_NEAR(r[3], -0.25); /* -0.5 + 0.5 * 0.5 */
	CHECK_NEAR(r[4], -1.0);	 /* did not compile */
	CHECK_NEAR(r[5], -1.0);	 /* compiled, no trial passed */
	CHECK_NEAR(r[6], -1.0);	 /* rejected: a hack is no partial credit */
	CHECK_NEAR(r[7], -0.5 + 0.5 / 3.0); /* -0.333333 */
	CHECK_NEAR(r[8], 0.0);		    /* every trial, then timing */
	CHECK_NEAR(r[9], -1.0);		    /* q NaN reads as 0 */
	CHECK_NEAR(r[10], 0.0);		    /* q clamped to 1 */
	CHECK(isnan(r[11]));
	CHECK_NEAR(r[12], 1.0); /* no speedup: s = 1, no bonus */
	/* A compile error that claims passed trials is still a failure. */
	struct kf_reward_item c = item(KF_STATUS_WRONG_ANSWER, NAN, 0.5);
	c.compiled = false;
	score("musacoder", NULL, &c, 1, r);
	CHECK_NEAR(r[0], -1.0);
	/* lambda 2, s_max 0.5: 1 + 2 * min(2, 0.5) = 2. */
	score("musacoder", "{\"lambda\": 2, \"s_max\": 0.5}", g, 1, r);
	CHECK_NEAR(r[0], 2.0);
	struct kf_reward_item three = ok(3.0);
	score("musacoder", "{\"lambda\": 2, \"s_max\": 0.5}", &three, 1, r);
	CHECK_NEAR(r[0], 2.0);
	/* lambda 0: every correct kernel scores 1. */
	score("musacoder", "{\"lambda\": 0}", &three, 1, r);
	CHECK_NEAR(r[0], 1.0);
}

static void test_reward_leap_rank_values(void)
{
	/* Scored: A 2x, B 1x, C 1.005x, D wrong (E infra is left out), so
	 * n = 4 and each plays 3 games. |1.005 - 1| = 0.005 <= 0.01 * 1.005:
	 * B and C tie. A: 3 wins = 1. B: loses A, ties C, beats D: 0/3.
	 * C: the same. D: 3 losses = -1. */
	struct kf_reward_item g[] = {ok(2.0), ok(1.0), ok(1.005), wrong(0.9),
				     infra()};
	double r[5];
	score("leap_rank", NULL, g, 5, r);
	CHECK_NEAR(r[0], 1.0);
	CHECK_NEAR(r[1], 0.0);
	CHECK_NEAR(r[2], 0.0);
	CHECK_NEAR(r[3], -1.0);
	CHECK(isnan(r[4]));
	/* tie_tol 0: C beats B. B: -1 -1 +1 = -1/3; C: -1 +1 +1 = 1/3. */
	score("leap_rank", "{\"tie_tol\": 0}", g, 5, r);
	CHECK_NEAR(r[0], 1.0);
	CHECK_NEAR(r[1], -1.0 / 3.0);
	CHECK_NEAR(r[2], 1.0 / 3.0);
	CHECK_NEAR(r[3], -1.0);
	/* One correct, two incorrect: 2/2 = 1; each incorrect loses one
	 * game and ties the other: -1/2. */
	struct kf_reward_item h[] = {wrong(0.9), ok(0.5), wrong(0)};
	score("leap_rank", NULL, h, 3, r);
	CHECK_NEAR(r[0], -0.5);
	CHECK_NEAR(r[1], 1.0);
	CHECK_NEAR(r[2], -0.5);
}

static void test_reward_leap_rank_edge_cases(void)
{
	double r[3];
	struct kf_reward_item one = ok(3.0);
	score("leap_rank", NULL, &one, 1, r);
	CHECK(r[0] == 0.0); /* no game to play */
	struct kf_reward_item eq[] = {ok(1.5), ok(1.5), ok(1.5)};
	score("leap_rank", NULL, eq, 3, r);
	CHECK(r[0] == 0.0 && r[1] == 0.0 && r[2] == 0.0);
	struct kf_reward_item bad[] = {wrong(0.9), wrong(0),
				       item(KF_STATUS_COMPILE_ERROR, NAN, 0)};
	score("leap_rank", NULL, bad, 3, r);
	CHECK(r[0] == 0.0 && r[1] == 0.0 && r[2] == 0.0);
	/* NaN counts as 1, so it ties a measured 1 and loses to 2:
	 * NaN: 0 - 1 = -1/2; 1: the same; 2: 2/2 = 1. */
	struct kf_reward_item odd[] = {ok(NAN), ok(1.0), ok(2.0)};
	score("leap_rank", NULL, odd, 3, r);
	CHECK_NEAR(r[0], -0.5);
	CHECK_NEAR(r[1], -0.5);
	CHECK_NEAR(r[2], 1.0);
}

static void test_reward_grpo_values(void)
{
	struct kf_err err = KF_ERR_INIT;
	/* 1, 2, 3: mean 2; population std sqrt(2/3) = 0.816497. */
	double r[] = {1, 2, 3, NAN}, a[4];
	CHECK(kf_reward_grpo(r, 4, 0, 0, a, &err) == 0);
	CHECK_NEAR(a[0], -1.224744871392);
	CHECK_NEAR(a[1], 0.0);
	CHECK_NEAR(a[2], 1.224744871392);
	CHECK(isnan(a[3])); /* no reward, no advantage */
	/* Sample std: sqrt(2 / 2) = 1, so -1, 0, 1. */
	CHECK(kf_reward_grpo(r, 4, 0, 1, a, &err) == 0);
	CHECK_NEAR(a[0], -1.0);
	CHECK_NEAR(a[2], 1.0);
	/* eps 1e-6: -1 / (1 + 1e-6) = -0.999999000001. */
	CHECK(kf_reward_grpo(r, 4, KF_REWARD_GRPO_EPS, 1, a, &err) == 0);
	CHECK_NEAR(a[0], -0.999999000001);
	/* In place. */
	double s[] = {-4, 0};
	CHECK(kf_reward_grpo(s, 2, 0, 0, s, &err) == 0);
	CHECK_NEAR(s[0], -1.0); /* mean -2, std 2 */
	CHECK_NEAR(s[1], 1.0);
}

static void test_reward_grpo_edge_cases(void)
{
	struct kf_err err = KF_ERR_INIT;
	double a[3] = {7, 7, 7};
	CHECK(kf_reward_grpo(NULL, 0, KF_REWARD_GRPO_EPS, 0, a, &err) == 0);
	CHECK(a[0] == 7);
	double one[] = {1.4};
	CHECK(kf_reward_grpo(one, 1, KF_REWARD_GRPO_EPS, 1, a, &err) == 0);
	CHECK(a[0] == 0.0); /* a group of one has no advantage */
	double eq[] = {0.3, 0.3, 0.3};
	CHECK(kf_reward_grpo(eq, 3, KF_REWARD_GRPO_EPS, 0, a, &err) == 0);
	CHECK(a[0] == 0.0 && a[1] == 0.0 && a[2] == 0.0);
	CHECK(kf_reward_grpo(eq, 3, 0, 0, a, &err) == 0); /* 0/0 is not NaN */
	CHECK(a[0] == 0.0 && a[1] == 0.0 && a[2] == 0.0);
	double lost[] = {NAN, NAN};
	CHECK(kf_reward_grpo(lost, 2, KF_REWARD_GRPO_EPS, 0, a, &err) == 0);
	CHECK(isnan(a[0]) && isnan(a[1]));
	double inf[] = {1, INFINITY};
	CHECK(kf_reward_grpo(inf, 2, 0, 0, a, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "grpo: reward 1 is infinite");
	CHECK(kf_reward_grpo(eq, 3, -1, 0, a, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "grpo: eps must be a finite number >= 0, got -1");
	CHECK(kf_reward_grpo(eq, 3, NAN, 0, a, &err) == KF_EINVAL);
	CHECK(kf_reward_grpo(eq, 3, 0, 2, a, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "grpo: ddof must be 0 or 1, got 2");
}

static void test_reward_anchor_values(void)
{
	struct kf_err err = KF_ERR_INIT;
	double out;
	/* 0.75 * -1 + 0.25 * 1.4 = -0.75 + 0.35 = -0.4. */
	double t[] = {-1, 0.2, 1.4, 0.9};
	CHECK(kf_reward_anchor(t, 4, KF_REWARD_ANCHOR_ALPHA, &out, &err) == 0);
	CHECK_NEAR(out, -0.4);
	/* alpha 0.5: 0.5 * -1 + 0.5 * 1.4 = 0.2. */
	CHECK(kf_reward_anchor(t, 4, 0.5, &out, &err) == 0);
	CHECK_NEAR(out, 0.2);
	CHECK(kf_reward_anchor(t, 4, 1, &out, &err) == 0);
	CHECK_NEAR(out, -1.0);
	CHECK(kf_reward_anchor(t, 4, 0, &out, &err) == 0);
	CHECK_NEAR(out, 1.4);
	/* A first turn lost to an infra error is skipped: first = best =
	 * 0.5; 0.75 * 0.5 + 0.25 * 0.5 = 0.5. */
	double u[] = {NAN, 0.5, 0.1};
	CHECK(kf_reward_anchor(u, 3, KF_REWARD_ANCHOR_ALPHA, &out, &err) == 0);
	CHECK_NEAR(out, 0.5);
	/* One turn: first = best. */
	CHECK(kf_reward_anchor(t + 2, 1, KF_REWARD_ANCHOR_ALPHA, &out, &err) ==
	      0);
	CHECK_NEAR(out, 1.4);
	/* The best may be the first: 0.75 * 2 + 0.25 * 2 = 2. */
	double v[] = {2, -1};
	CHECK(kf_reward_anchor(v, 2, KF_REWARD_ANCHOR_ALPHA, &out, &err) == 0);
	CHECK_NEAR(out, 2.0);
}

static void test_reward_anchor_edge_cases(void)
{
	struct kf_err err = KF_ERR_INIT;
	double out = 0;
	CHECK(kf_reward_anchor(NULL, 0, KF_REWARD_ANCHOR_ALPHA, &out, &err) ==
	      0);
	CHECK(isnan(out));
	double lost[] = {NAN, NAN};
	out = 0;
	CHECK(kf_reward_anchor(lost, 2, KF_REWARD_ANCHOR_ALPHA, &out, &err) ==
	      0);
	CHECK(isnan(out));
	double t[] = {0, -INFINITY};
	CHECK(kf_reward_anchor(t, 2, 0.75, &out, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "anchor: the reward of turn 1 is infinite");
	CHECK(kf_reward_anchor(t, 1, 1.5, &out, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "anchor: alpha must be between 0 and 1, got 1.5");
	CHECK(kf_reward_anchor(t, 1, NAN, &out, &err) == KF_EINVAL);
}

/* The anchor keeps the order of kernels: with the same first turn, a
 * trajectory whose best kernel is correct scores above one whose best is
 * incorrect; and a trajectory of correct kernels scores above one of
 * incorrect kernels. Turn rewards are MusaCoder's. */
static void test_reward_anchor_keeps_correct_above_incorrect(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward d = design("musacoder", NULL);
	uint64_t x = 7;
	for (int round = 0; round < 500; round++) {
		struct kf_reward_item it[4];
		double r[4];
		for (int i = 0; i < 4; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			double u = (double)(x >> 11) / 9007199254740992.0;
			it[i] = i < 2 ? ok(0.2 + 5 * u) : wrong(u);
		}
		CHECK(kf_reward_score(&d, it, 4, r, &err) == 0);
		double first = r[2]; /* the same incorrect first turn */
		double tc[] = {first, r[0]}, tw[] = {first, r[3]};
		double ac, aw;
		CHECK(kf_reward_anchor(tc, 2, 0.75, &ac, &err) == 0);
		CHECK(kf_reward_anchor(tw, 2, 0.75, &aw, &err) == 0);
		CHECK_MSG(ac > aw, "round %d: %g <= %g", round, ac, aw);
		double cc[] = {r[0], r[1]}, ww[] = {r[2], r[3]};
		CHECK(kf_reward_anchor(cc, 2, 0.75, &ac, &err) == 0);
		CHECK(kf_reward_anchor(ww, 2, 0.75, &aw, &err) == 0);
		CHECK_MSG(ac > aw, "round %d: %g <= %g", round, ac, aw);
	}
}

static void test_reward_prune_decision(void)
{
	struct kf_err err = KF_ERR_INIT;
	enum kf_reward_turns t;
	/* 3 of 4 failed: 0.75 >= 0.5, further turns. */
	struct kf_reward_item hard[] = {wrong(0), wrong(0.5), ok(1.2),
					item(KF_STATUS_TIMEOUT, NAN, 0)};
	CHECK_NEAR(kf_reward_fail_share(hard, 4), 0.75);
	CHECK(kf_reward_prune(hard, 4, KF_REWARD_PRUNE_THRESHOLD, &t, &err) ==
	      0);
	CHECK(t == KF_REWARD_CONTINUE);
	/* 1 of 4: 0.25 < 0.5, stop. */
	struct kf_reward_item easy[] = {ok(1), ok(2), wrong(0), ok(1.1)};
	CHECK_NEAR(kf_reward_fail_share(easy, 4), 0.25);
	CHECK(kf_reward_prune(easy, 4, 0.5, &t, &err) == 0);
	CHECK(t == KF_REWARD_STOP);
	/* Infra errors are left out: 1 of 2 = 0.5, and the threshold is
	 * inclusive. */
	struct kf_reward_item half[] = {wrong(0), infra(), ok(1), infra()};
	CHECK_NEAR(kf_reward_fail_share(half, 4), 0.5);
	CHECK(kf_reward_prune(half, 4, 0.5, &t, &err) == 0);
	CHECK(t == KF_REWARD_CONTINUE);
	CHECK(kf_reward_prune(half, 4, 0.51, &t, &err) == 0);
	CHECK(t == KF_REWARD_STOP);
	/* Threshold 0: every group goes on; 1: only the all-failed. */
	struct kf_reward_item good[] = {ok(1), ok(1)};
	CHECK(kf_reward_prune(good, 2, 0, &t, &err) == 0);
	CHECK(t == KF_REWARD_CONTINUE);
	CHECK(kf_reward_prune(hard, 4, 1, &t, &err) == 0);
	CHECK(t == KF_REWARD_STOP);
	struct kf_reward_item bad[] = {wrong(0), infra()};
	CHECK(kf_reward_prune(bad, 2, 1, &t, &err) == 0);
	CHECK(t == KF_REWARD_CONTINUE);
	/* Nothing scored (or nothing at all): no decision. */
	struct kf_reward_item lost[] = {infra()};
	CHECK(isnan(kf_reward_fail_share(lost, 1)));
	CHECK(kf_reward_prune(lost, 1, 0.5, &t, &err) == 0);
	CHECK(t == KF_REWARD_UNKNOWN);
	CHECK(kf_reward_prune(NULL, 0, 0.5, &t, &err) == 0);
	CHECK(t == KF_REWARD_UNKNOWN);
	CHECK(kf_reward_prune(hard, 4, 1.2, &t, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "prune: threshold must be between 0 and 1, got 1.2");
}

static void test_reward_retry_buffer_is_bounded_fifo(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward_retry *b = NULL;
	CHECK(kf_reward_retry_new(2, &b, &err) == 0);
	struct kf_reward_item failed[] = {
	    wrong(0.5), infra(), item(KF_STATUS_COMPILE_ERROR, NAN, 0)};
	struct kf_reward_item mixed[] = {wrong(0), ok(1.0)};
	struct kf_reward_item lost[] = {infra(), infra()};
	CHECK(kf_reward_retry_offer(b, "a", failed, 3, &err) == 1);
	CHECK(kf_reward_retry_offer(b, "b", mixed, 2, &err) == 0);
	CHECK(kf_reward_retry_offer(b, "b", lost, 2, &err) == 0);
	CHECK(kf_reward_retry_offer(b, "b", NULL, 0, &err) == 0);
	CHECK(kf_reward_retry_offer(b, "c", failed, 1, &err) == 1);
	CHECK(kf_reward_retry_offer(b, "a", failed, 1, &err) == 0); /* waits */
	CHECK(kf_reward_retry_len(b) == 2);
	CHECK(kf_reward_retry_evicted(b) == 0);
	/* Full: "d" evicts the oldest, "a". */
	CHECK(kf_reward_retry_offer(b, "d", failed, 1, &err) == 1);
	CHECK(kf_reward_retry_len(b) == 2);
	CHECK(kf_reward_retry_evicted(b) == 1);
	char *id = kf_reward_retry_take(b);
	CHECK_STR(id, "c");
	free(id);
	/* "c" failed again on its retry: it goes to the back. */
	CHECK(kf_reward_retry_offer(b, "c", failed, 1, &err) == 1);
	id = kf_reward_retry_take(b);
	CHECK_STR(id, "d");
	free(id);
	id = kf_reward_retry_take(b);
	CHECK_STR(id, "c");
	free(id);
	CHECK(kf_reward_retry_take(b) == NULL);
	CHECK(kf_reward_retry_len(b) == 0);
	/* Wrapping the ring many times keeps the order. */
	char name[16];
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		CHECK(kf_reward_retry_offer(b, name, failed, 1, &err) == 1);
	}
	CHECK(kf_reward_retry_evicted(b) == 1 + 8);
	id = kf_reward_retry_take(b);
	CHECK_STR(id, "p8");
	free(id);
	kf_reward_retry_free(b); /* frees "p9" still waiting */
	kf_reward_retry_free(NULL);
}

static void test_reward_retry_buffer_rejects_bad_input(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward_retry *b = NULL;
	CHECK(kf_reward_retry_new(0, &b, &err) == KF_EINVAL);
	CHECK_STR(err.msg,
		  "retry buffer: capacity must be between 1 and 65536, got 0");
	CHECK(kf_reward_retry_new(KF_REWARD_RETRY_MAX + 1, &b, &err) ==
	      KF_EINVAL);
	CHECK(b == NULL);
	CHECK(kf_reward_retry_new(1, &b, &err) == 0);
	struct kf_reward_item failed = wrong(0);
	CHECK(kf_reward_retry_offer(b, "", &failed, 1, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "retry buffer: empty prompt id");
	CHECK(kf_reward_retry_offer(b, NULL, &failed, 1, &err) == KF_EINVAL);
	char *big = kf_xmalloc(KF_REWARD_PROMPT_CAP + 2);
	memset(big, 'x', KF_REWARD_PROMPT_CAP + 1);
	big[KF_REWARD_PROMPT_CAP + 1] = 0;
	CHECK(kf_reward_retry_offer(b, big, &failed, 1, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "retry buffer: prompt id longer than 4096 bytes");
	big[KF_REWARD_PROMPT_CAP] = 0; /* exactly the cap is accepted */
	CHECK(kf_reward_retry_offer(b, big, &failed, 1, &err) == 1);
	CHECK(kf_reward_retry_len(b) == 1);
	free(big);
	kf_reward_retry_free(b);
}

/* A small deterministic generator (PCG's LCG step, top bits). */
static uint64_t rng_state;
static double uniform(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

static double random_speedup(void)
{
	double u = uniform();
	if (u < 0.05)
		return NAN;
	if (u < 0.08)
		return INFINITY;
	if (u < 0.10)
		return 0.0;
	if (u < 0.12)
		return -1.0;
	if (u < 0.20)
		return 1.0;		/* many exact ties */
	return exp(12 * uniform() - 6); /* 0.0025x to 400x */
}

static struct kf_reward_item random_item(int mode)
{
	/* mode 0: 40 % correct, 10 % infra_error, the rest failed; mode 1:
	 * all correct; mode 2: all failed. */
	double u = uniform();
	int st = 1 + (int)(uniform() * 6); /* compile_error .. rejected */
	if (mode == 1 || (mode == 0 && u < 0.4))
		st = KF_STATUS_OK;
	else if (mode == 0 && u < 0.5)
		st = KF_STATUS_INFRA_ERROR;
	struct kf_reward_item it = item((enum kf_status)st, random_speedup(),
					uniform() < 0.1 ? NAN : uniform());
	it.compiled = uniform() < 0.8;
	return it;
}

/* Over 3000 random groups (fixed seed), for every design and a few
 * parameter settings: within each group every correct item scores above
 * every incorrect one, and so does its GRPO advantage; per-item designs and
 * cuda_l1 keep it across groups too. */
static void test_reward_every_design_scores_correct_above_incorrect(void)
{
	static const struct {
		const char *name, *params;
		int across; /* the rule holds across groups */
	} cases[] = {
	    {"log_speedup", NULL, 1},
	    {"log_speedup", "{\"clip\": 0.5, \"separation\": 1e-6}", 1},
	    {"cuda_l1", NULL, 1},
	    {"cuda_l1", "{\"clip\": 10, \"separation\": 0.01}", 1},
	    {"musacoder", NULL, 1},
	    {"musacoder", "{\"lambda\": 0, \"s_max\": 0}", 1},
	    {"musacoder", "{\"lambda\": 100, \"s_max\": 1e6}", 1},
	    {"leap_rank", NULL, 0},
	    {"leap_rank", "{\"tie_tol\": 1}", 0},
	};
	struct kf_err err = KF_ERR_INIT;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct kf_reward d = design(cases[c].name, cases[c].params);
		rng_state = 20261130 + c;
		double lo_all = INFINITY, hi_all = -INFINITY;
		int groups_mixed = 0;
		for (int g = 0; g < 3000; g++) {
			struct kf_reward_item it[13];
			double r[13], adv[13];
			size_t n = (size_t)(uniform() * 13); /* 0 to 12 */
			int mode = g % 3;
			for (size_t i = 0; i < n; i++)
				it[i] = random_item(mode);
			CHECK_MSG(kf_reward_score(&d, it, n, r, &err) == 0,
				  "%s", err.msg);
			CHECK(kf_reward_grpo(r, n, KF_REWARD_GRPO_EPS, 1, adv,
					     &err) == 0);
			double lo = INFINITY, hi = -INFINITY;
			double alo = INFINITY, ahi = -INFINITY;
			for (size_t i = 0; i < n; i++) {
				if (!kf_reward_item_scored(&it[i])) {
					CHECK(isnan(r[i]) && isnan(adv[i]));
					continue;
				}
				CHECK(isfinite(r[i]) && isfinite(adv[i]));
				if (kf_reward_item_correct(&it[i])) {
					lo = fmin(lo, r[i]);
					alo = fmin(alo, adv[i]);
				} else {
					hi = fmax(hi, r[i]);
					ahi = fmax(ahi, adv[i]);
				}
				if (!strcmp(cases[c].name, "leap_rank"))
					CHECK(r[i] >= -1 && r[i] <= 1);
			}
			CHECK_MSG(lo > hi, "%s group %d: %g <= %g",
				  cases[c].name, g, lo, hi);
			CHECK_MSG(alo > ahi, "%s group %d: advantages",
				  cases[c].name, g);
			groups_mixed += isfinite(lo) && isfinite(hi);
			lo_all = fmin(lo_all, lo);
			hi_all = fmax(hi_all, hi);
		}
		CHECK(groups_mixed > 500); /* the rule was really put to work */
		if (cases[c].across)
			CHECK_MSG(lo_all > hi_all, "%s: across groups %g <= %g",
				  cases[c].name, lo_all, hi_all);
	}
}

/* The rule is the design's contract, and kf_reward_score holds any design
 * to it, built in or not. */
static double inverted_item(const struct kf_reward_item *it, const double *p)
{
	(void)p;
	return kf_reward_item_correct(it) ? 1.0 : 2.0;
}

static double nan_item(const struct kf_reward_item *it, const double *p)
{
	(void)it;
	(void)p;
	return NAN;
}

static void plain_group(const struct kf_reward_item *items, size_t n,
			const double *p, double *out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = kf_reward_item_correct(&items[i]) ? p[0] : -p[0];
}

static int plain_check(const double *p, struct kf_err *err)
{
	if (p[0] == 0)
		return kf_err_set(err, KF_EINVAL,
				  "parameter 'gap' must not be 0");
	return 0;
}

static const struct kf_reward_param gap_param[] = {
    {"gap", 1.0, -10, 10, "half the gap"},
};

static void test_reward_score_holds_designs_to_the_rule(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward r = KF_REWARD_INIT;
	struct kf_reward_ops inv = {
	    .version = KF_REWARD_OPS_VERSION,
	    .name = "inverted",
	    .item = inverted_item,
	};
	CHECK(kf_reward_init_ops(&r, &inv, NULL, &err) == 0);
	struct kf_reward_item g[] = {ok(2.0), wrong(0), infra()};
	double out[3] = {0, 0, 0};
	CHECK(kf_reward_score(&r, g, 3, out, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "inverted: correct item 0 scored 1, not above "
			   "incorrect item 1 (2)");
	CHECK(isnan(out[0]) && isnan(out[1]) && isnan(out[2]));
	/* One side alone breaks nothing. */
	CHECK(kf_reward_score(&r, g, 1, out, &err) == 0);
	CHECK_NEAR(out[0], 1.0);

	struct kf_reward_ops nan_ops = inv;
	nan_ops.name = "nan";
	nan_ops.item = nan_item;
	CHECK(kf_reward_init_ops(&r, &nan_ops, NULL, &err) == 0);
	CHECK(kf_reward_score(&r, g, 3, out, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "nan: item 0 got a non-finite reward");

	/* A group design with a parameter and a check of its own. */
	struct kf_reward_ops plain = {
	    .version = KF_REWARD_OPS_VERSION,
	    .name = "plain",
	    .params = gap_param,
	    .n_params = 1,
	    .group = plain_group,
	    .check = plain_check,
	};
	CHECK(kf_reward_init_ops(&r, &plain, NULL, &err) == 0);
	CHECK(kf_reward_score(&r, g, 3, out, &err) == 0);
	CHECK_NEAR(out[0], 1.0);
	CHECK_NEAR(out[1], -1.0);
	CHECK(isnan(out[2]));
	cJSON *p = cJSON_Parse("{\"gap\": 0}");
	CHECK(kf_reward_init_ops(&r, &plain, p, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "plain: parameter 'gap' must not be 0");
	cJSON_Delete(p);
	p = cJSON_Parse("{\"gap\": -1}");
	CHECK(kf_reward_init_ops(&r, &plain, p, &err) == 0);
	CHECK(kf_reward_score(&r, g, 3, out, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "plain: correct item 0 scored -1, not above "
			   "incorrect item 1 (1)");
	cJSON_Delete(p);
}

static void test_reward_malformed_ops_tables_are_refused(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_reward r = KF_REWARD_INIT;
	struct kf_reward_ops t = {
	    .version = KF_REWARD_OPS_VERSION + 1,
	    .name = "future",
	    .item = inverted_item,
	};
	CHECK(kf_reward_init_ops(&r, &t, NULL, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "future: ops table version 2, kforge expects 1");
	t.version = KF_REWARD_OPS_VERSION;
	t.group = plain_group;
	CHECK(kf_reward_init_ops(&r, &t, NULL, &err) == KF_EINVAL);
	CHECK_STR(err.msg,
		  "future: ops table must set exactly one of item and group");
	t.item = NULL;
	t.group = NULL;
	CHECK(kf_reward_init_ops(&r, &t, NULL, &err) == KF_EINVAL);
	t.item = inverted_item;
	t.n_params = KF_REWARD_MAX_PARAMS + 1;
	t.params = gap_param;
	CHECK(kf_reward_init_ops(&r, &t, NULL, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "future: ops table has 9 parameters (at most 8)");
	static const struct kf_reward_param bad_default[] = {
	    {"x", 5, 0, 1, "default outside"},
	};
	t.n_params = 1;
	t.params = bad_default;
	CHECK(kf_reward_init_ops(&r, &t, NULL, &err) == KF_EINVAL);
	CHECK_STR(err.msg, "future: parameter 0 has no name or a default "
			   "outside its range");
	CHECK(kf_reward_init_ops(&r, NULL, NULL, &err) == KF_EINVAL);
	CHECK(r.ops == NULL);
}

KF_TESTS(reward) = {
    KF_TEST(test_reward_item_from_a_correct_result),
    KF_TEST(test_reward_item_from_a_failed_result),
    KF_TEST(test_reward_item_from_result_names_what_is_wrong),
    KF_TEST(test_reward_item_from_real_results),
    KF_TEST(test_reward_designs_are_found_by_name),
    KF_TEST(test_reward_parameters_have_defaults_and_parse),
    KF_TEST(test_reward_parameter_errors_name_the_key),
    KF_TEST(test_reward_log_speedup_values),
    KF_TEST(test_reward_cuda_l1_values),
    KF_TEST(test_reward_cuda_l1_edge_cases),
    KF_TEST(test_reward_musacoder_values),
    KF_TEST(test_reward_leap_rank_values),
    KF_TEST(test_reward_leap_rank_edge_cases),
    KF_TEST(test_reward_grpo_values),
    KF_TEST(test_reward_grpo_edge_cases),
    KF_TEST(test_reward_anchor_values),
    KF_TEST(test_reward_anchor_edge_cases),
    KF_TEST(test_reward_anchor_keeps_correct_above_incorrect),
    KF_TEST(test_reward_prune_decision),
    KF_TEST(test_reward_retry_buffer_is_bounded_fifo),
    KF_TEST(test_reward_retry_buffer_rejects_bad_input),
    KF_TEST(test_reward_every_design_scores_correct_above_incorrect),
    KF_TEST(test_reward_score_holds_designs_to_the_rule),
    KF_TEST(test_reward_malformed_ops_tables_are_refused),
    KF_TESTS_END,
};
