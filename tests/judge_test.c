/*
 * judge_test.c: the judge's timing rules on measurements made up here, so
 * that each decision is checked against known inputs: honest noise and load
 * pass, a forged report is charged and rejected.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../src/eval/eval_int.h"
#include "harness.h"

/* A generator for made-up noise: the same numbers on every run. */
static double noise(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return ((*s >> 8) & 0xffff) / 65536.0 - 0.5;
}

enum { N = 60 };

/* Host pairs: the candidate takes 1 ms and the reference 3 ms of CPU time;
 * each runner's own cost per call is 50 us with 10 us of noise; the
 * candidate's report leaves out forge_ns more than that. */
static void host_pairs(double *c, double *r, double *cw, double *rw,
		       double forge_ns)
{
	unsigned s = 7;
	for (int i = 0; i < N; i++) {
		double tc = 1e6 + 2e4 * noise(&s), tr = 3e6 + 2e4 * noise(&s);
		c[i] = tc - forge_ns;
		r[i] = tr;
		cw[i] = tc + 5e4 + 1e4 * noise(&s);
		rw[i] = tr + 5e4 + 1e4 * noise(&s);
	}
}

static void test_judge_unaccounted_host_honest_passes_uncharged(void)
{
	double c[N], r[N], cw[N], rw[N];
	host_pairs(c, r, cw, rw, 0);
	cJSON *tm = cJSON_CreateObject();
	struct verdict v = {0};
	double charge = kf_judge_unaccounted(c, r, cw, rw, N, true, tm, &v);
	CHECK(v.status == KF_STATUS_OK);
	/* At most the noise of a median of 60 differences. */
	CHECK(charge >= 0 && charge < 5e3);
	const cJSON *u = cJSON_GetObjectItem(tm, "unaccounted_ms");
	CHECK_STR(kf_json_str(u, "view"), "cpu");
	CHECK_STR(kf_json_str(u, "statistic"), "median_difference");
	cJSON_Delete(tm);
}

static void test_judge_unaccounted_host_forged_tenth_is_rejected(void)
{
	double c[N], r[N], cw[N], rw[N];
	host_pairs(c, r, cw, rw, 1e5); /* 10 % of the candidate's 1 ms */
	cJSON *tm = cJSON_CreateObject();
	struct verdict v = {0};
	double charge = kf_judge_unaccounted(c, r, cw, rw, N, true, tm, &v);
	CHECK(v.status == KF_STATUS_REJECTED);
	CHECK_STR(v.check, "unaccounted_time");
	CHECK_CONTAINS(v.reason, "under-reported its time");
	/* What it hid comes back to it. */
	CHECK(fabs(charge - 1e5) < 5e3);
	cJSON_Delete(tm);
}

static void test_judge_unaccounted_host_small_forgery_is_charged(void)
{
	double c[N], r[N], cw[N], rw[N];
	host_pairs(c, r, cw, rw, 1.5e4); /* below the 0.02 ms floor */
	cJSON *tm = cJSON_CreateObject();
	struct verdict v = {0};
	double charge = kf_judge_unaccounted(c, r, cw, rw, N, true, tm, &v);
	CHECK(v.status == KF_STATUS_OK);
	CHECK(fabs(charge - 1.5e4) < 5e3);
	cJSON_Delete(tm);
}

/* Device pairs: wall-time views, with bursts of delay of up to 3 ms on
 * one side or the other in a third of the calls (compiles beside it). */
static void device_pairs(double *c, double *r, double *cw, double *rw,
			 double forge_ns)
{
	unsigned s = 11;
	for (int i = 0; i < N; i++) {
		double tc = 4e5, tr = 8e5;
		c[i] = tc - forge_ns;
		r[i] = tr;
		cw[i] = tc + 5e5 + 2e4 * noise(&s);
		rw[i] = tr + 5e5 + 2e4 * noise(&s);
		if (i % 3 == 0)
			cw[i] += 3e6 * (noise(&s) + 0.5);
		if (i % 3 == 1)
			rw[i] += 3e6 * (noise(&s) + 0.5);
	}
}

static void test_judge_unaccounted_device_bursts_pass(void)
{
	double c[N], r[N], cw[N], rw[N];
	device_pairs(c, r, cw, rw, 0);
	cJSON *tm = cJSON_CreateObject();
	struct verdict v = {0};
	double charge = kf_judge_unaccounted(c, r, cw, rw, N, false, tm, &v);
	CHECK(v.status == KF_STATUS_OK);
	CHECK(charge == 0); /* nothing is charged on a device */
	const cJSON *u = cJSON_GetObjectItem(tm, "unaccounted_ms");
	CHECK_STR(kf_json_str(u, "statistic"), "p10_difference");
	cJSON_Delete(tm);
}

static void test_judge_unaccounted_device_forgery_is_rejected(void)
{
	double c[N], r[N], cw[N], rw[N];
	device_pairs(c, r, cw, rw, 2e5); /* half of the candidate's 0.4 ms */
	cJSON *tm = cJSON_CreateObject();
	struct verdict v = {0};
	kf_judge_unaccounted(c, r, cw, rw, N, false, tm, &v);
	CHECK(v.status == KF_STATUS_REJECTED);
	CHECK_STR(v.check, "unaccounted_time");
	CHECK_CONTAINS(v.reason, "lower deciles");
	cJSON_Delete(tm);
}

static void test_judge_roofline_cap(void)
{
	struct verdict v = {0};
	/* 1 GB at 1 TB/s is 1 ms: 0.8 ms passes, 0.5 ms does not. */
	kf_judge_roofline(0.8e6, 0, 1e9, 1e12, 1e12, &v);
	CHECK(v.status == KF_STATUS_OK);
	kf_judge_roofline(0.5e6, 0, 1e9, 1e12, 1e12, &v);
	CHECK(v.status == KF_STATUS_REJECTED);
	CHECK_STR(v.check, "implausible");
	CHECK_CONTAINS(v.reason, "2.00 times faster than the roofline");
}

KF_TESTS(judge) = {
    KF_TEST(test_judge_unaccounted_host_honest_passes_uncharged),
    KF_TEST(test_judge_unaccounted_host_forged_tenth_is_rejected),
    KF_TEST(test_judge_unaccounted_host_small_forgery_is_charged),
    KF_TEST(test_judge_unaccounted_device_bursts_pass),
    KF_TEST(test_judge_unaccounted_device_forgery_is_rejected),
    KF_TEST(test_judge_roofline_cap),
    KF_TESTS_END,
};
