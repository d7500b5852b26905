/* farm_test.c: tests of the farm: the bounded queue, the order of results,
 * errors that stay with their candidate, and parallel runs that give the
 * statuses of a serial one. */
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/farm.h>

#include "harness.h"

#define ROWSUM "tests/fixtures/rowsum"
#define CAND(name) ROWSUM "/candidates/" name ".c"

static void use_tmp_cache(void)
{
	char *dir = kf_path_join(kf_test_tmpdir(), "cache");
	CHECK(setenv("KFORGE_CACHE", dir, 1) == 0);
	free(dir);
}

struct pusher {
	struct kf_queue *q;
	int v, rc;
	volatile int done;
};

static void *push_one(void *arg)
{
	struct pusher *p = arg;
	p->rc = kf_queue_push(p->q, p->v);
	p->done = 1;
	return NULL;
}

static void test_farm_queue_is_fifo_and_bounded(void)
{
	struct kf_queue q;
	kf_queue_init(&q, 2);
	CHECK(kf_queue_push(&q, 1) == 0);
	CHECK(kf_queue_push(&q, 2) == 0);
	/* Full: a third push waits for a pop. */
	struct pusher p = {&q, 3, -2, 0};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, push_one, &p) == 0);
	usleep(200 * 1000);
	CHECK(!p.done);
	int v = 0;
	CHECK(kf_queue_pop(&q, &v) == 0 && v == 1);
	pthread_join(t, NULL);
	CHECK(p.done && p.rc == 0);
	CHECK(kf_queue_pop(&q, &v) == 0 && v == 2);
	CHECK(kf_queue_push(&q, 4) == 0);
	kf_queue_close(&q);
	/* Closed: what is left drains in order, then -1; no more pushes. */
	CHECK(kf_queue_push(&q, 5) == -1);
	CHECK(kf_queue_pop(&q, &v) == 0 && v == 3);
	CHECK(kf_queue_pop(&q, &v) == 0 && v == 4);
	CHECK(kf_queue_pop(&q, &v) == -1);
	kf_queue_destroy(&q);
}

static void test_farm_close_wakes_a_blocked_pusher(void)
{
	struct kf_queue q;
	kf_queue_init(&q, 1);
	CHECK(kf_queue_push(&q, 1) == 0);
	struct pusher p = {&q, 2, -2, 0};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, push_one, &p) == 0);
	usleep(100 * 1000);
	kf_queue_close(&q);
	pthread_join(t, NULL);
	CHECK(p.rc == -1);
	kf_queue_destroy(&q);
}

struct counts {
	int calls, last_done, last_compiled, max_done;
};

static void count_progress(void *arg, const struct kf_farm_progress *p)
{
	struct counts *c = arg;
	c->calls++;
	CHECK(p->done >= c->last_done); /* one call at a time, monotone */
	c->last_done = p->done;
	c->last_compiled = p->compiled;
	CHECK(p->done <= p->total && p->compiled <= p->total);
}

static const char *const mixed[] = {
    CAND("same"),
    CAND("segv"),
    CAND("syntax"),
    CAND("nonzero"),
    ROWSUM "/candidates/no_such_file.c",
    CAND("partial"),
};
#define N_MIXED (int)(sizeof(mixed) / sizeof(mixed[0]))

static void run_mixed(int jobs, int slots, struct kf_farm_item *items,
		      struct counts *c)
{
	struct kf_farm_opts o = KF_FARM_OPTS_INIT;
	o.eval.seed = 1;
	o.eval.no_timing = true;
	o.eval.include_dir = "include";
	o.eval.mem_limit_bytes = 1ull << 30;
	o.jobs = jobs;
	o.slots = slots;
	o.progress = count_progress;
	o.progress_arg = c;
	for (int i = 0; i < N_MIXED; i++) {
		memset(&items[i], 0, sizeof(items[i]));
		items[i].candidate = mixed[i];
	}
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_farm_run(ROWSUM, items, N_MIXED, &o, &err) == 0, "%s",
		  err.msg);
}

static const char *status_of(const struct kf_farm_item *it)
{
	return it->rc ? "(error)" : kf_json_str(it->result, "status");
}

static void test_farm_errors_stay_with_their_candidate(void)
{
	use_tmp_cache();
	struct kf_farm_item items[N_MIXED];
	struct counts c = {0};
	run_mixed(2, 1, items, &c);
	static const char *const want[N_MIXED] = {
	    "ok",      "runtime_error", "compile_error", "runtime_error",
	    "(error)", "wrong_answer"};
	for (int i = 0; i < N_MIXED; i++) {
		CHECK_MSG(!strcmp(status_of(&items[i]), want[i]),
			  "%s: %s, want %s (%s)", mixed[i],
			  status_of(&items[i]), want[i], items[i].err);
		/* Results come back in the order given. */
		if (!items[i].rc)
			CHECK_STR(kf_json_str(cJSON_GetObjectItem(
						  items[i].result, "candidate"),
					      "path"),
				  mixed[i]);
	}
	CHECK_CONTAINS(items[4].err, "no_such_file.c");
	CHECK(items[2].device == -1); /* a compile error holds no slot */
	CHECK(c.last_done == N_MIXED);
	CHECK(c.last_compiled == N_MIXED);
	for (int i = 0; i < N_MIXED; i++)
		cJSON_Delete(items[i].result);
}

static void test_farm_parallel_statuses_match_serial(void)
{
	use_tmp_cache();
	struct kf_farm_item one[N_MIXED], two[N_MIXED];
	struct counts c1 = {0}, c2 = {0};
	run_mixed(1, 1, one, &c1);
	run_mixed(2, 2, two, &c2);
	for (int i = 0; i < N_MIXED; i++) {
		CHECK_MSG(!strcmp(status_of(&one[i]), status_of(&two[i])),
			  "%s: --jobs 1 %s, --jobs 2 %s", mixed[i],
			  status_of(&one[i]), status_of(&two[i]));
		cJSON_Delete(one[i].result);
		cJSON_Delete(two[i].result);
	}
}

static void test_farm_result_records_the_compile(void)
{
	use_tmp_cache();
	struct kf_farm_item it = {.candidate = CAND("same")};
	struct kf_farm_opts o = KF_FARM_OPTS_INIT;
	o.eval.seed = 1;
	o.eval.no_timing = true;
	o.eval.include_dir = "include";
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_farm_run(ROWSUM, &it, 1, &o, &err) == 0, "%s", err.msg);
	CHECK(it.rc == 0 && it.compile_s > 0);
	const cJSON *c = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(it.result, "compile"), "candidate");
	/* Compiled by the pool, as a lone evaluation would have. */
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(c, "cached")));
	CHECK(cJSON_GetObjectItem(c, "seconds")->valuedouble == it.compile_s);
	cJSON_Delete(it.result);
}

/* An item's own options are its evaluation's (kforge redteam: a case's
 * "timing": false), two slots on the host at once; the farm's for the
 * others. */
static void test_farm_item_options_are_its_own(void)
{
	use_tmp_cache();
	struct kf_eval_opts untimed = KF_EVAL_OPTS_INIT;
	untimed.seed = 1;
	untimed.no_timing = true;
	untimed.include_dir = "include";
	struct kf_farm_item it[3] = {{.candidate = CAND("same")},
				     {.candidate = CAND("same"),
				      .eval = &untimed},
				     {.candidate = CAND("same")}};
	struct kf_farm_opts o = KF_FARM_OPTS_INIT;
	o.eval.seed = 1;
	o.eval.time_cap_s = 0.05;
	o.eval.include_dir = "include";
	o.jobs = 2;
	o.slots = 2;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_farm_run(ROWSUM, it, 3, &o, &err) == 0, "%s", err.msg);
	for (int i = 0; i < 3; i++) {
		CHECK_MSG(it[i].rc == 0 && !strcmp(status_of(&it[i]), "ok"),
			  "item %d: %s %s", i, status_of(&it[i]), it[i].err);
		CHECK_MSG(!cJSON_GetObjectItem(it[i].result, "timing") ==
			      (i == 1),
			  "item %d", i);
		cJSON_Delete(it[i].result);
	}
}

static void test_farm_missing_task_is_an_error(void)
{
	use_tmp_cache();
	struct kf_farm_item it = {.candidate = CAND("same")};
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_farm_run("tests/fixtures/no_such_task", &it, 1, NULL, &err) !=
	      0);
	CHECK(err.msg[0]);
}

static void test_farm_gpu_count_without_driver_is_zero(void)
{
	if (kf_farm_gpu_count() > 0) {
		/* A GPU machine: the visible list decides. */
		CHECK(setenv("CUDA_VISIBLE_DEVICES", "0,1,2", 1) == 0);
		CHECK(kf_farm_gpu_count() == 3);
		return;
	}
	CHECK(setenv("CUDA_VISIBLE_DEVICES", "0,1", 1) == 0);
	CHECK(kf_farm_gpu_count() == 0); /* no driver: no GPU at all */
}

/* Runs the CLI with a shell command line; returns its stdout, *code its
 * exit status. */
static char *cli(const char *args, int *code)
{
	char *cmd =
	    kf_xasprintf("%s/kforge %s 2>/dev/null", kf_test_build_dir(), args);
	char *out = kf_test_shell(cmd, code);
	free(cmd);
	return out;
}

static void test_farm_cli_evaluates_many_candidates(void)
{
	use_tmp_cache();
	int code = 0;
	char *out = cli("eval " ROWSUM " " CAND("same") " " CAND(
			    "syntax") " --jobs 2 --no-timing --seed 1 --json",
			&code);
	CHECK_MSG(code == 1, "exit %d", code); /* one is not ok */
	cJSON *arr = cJSON_Parse(out);
	CHECK_MSG(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 2, "%s",
		  out);
	CHECK_STR(kf_json_str(cJSON_GetArrayItem(arr, 0), "status"), "ok");
	CHECK_STR(kf_json_str(cJSON_GetArrayItem(arr, 1), "status"),
		  "compile_error");
	cJSON_Delete(arr);
	free(out);
	/* Text: one line per candidate, in order; no bar off a terminal. */
	out = cli("eval " ROWSUM
		  " " CAND("same") " " CAND("same") " --no-timing --seed 1",
		  &code);
	CHECK_MSG(code == 0, "exit %d: %s", code, out);
	CHECK(!strchr(out, '\r'));
	int lines = 0;
	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	CHECK_MSG(lines == 2, "%s", out);
	CHECK_CONTAINS(out, "same.c");
	free(out);
}

KF_TESTS(farm) = {
    KF_TEST(test_farm_queue_is_fifo_and_bounded),
    KF_TEST(test_farm_close_wakes_a_blocked_pusher),
    KF_TEST(test_farm_errors_stay_with_their_candidate),
    KF_TEST(test_farm_parallel_statuses_match_serial),
    KF_TEST(test_farm_result_records_the_compile),
    KF_TEST(test_farm_item_options_are_its_own),
    KF_TEST(test_farm_missing_task_is_an_error),
    KF_TEST(test_farm_gpu_count_without_driver_is_zero),
    KF_TEST(test_farm_cli_evaluates_many_candidates),
    KF_TESTS_END,
};
