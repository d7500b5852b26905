/* farm_test.c: tests of the farm: the bounded queue, the order of results,
 * errors that stay with their candidate, and parallel runs that give the
 * statuses of a serial one. */
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/exec.h>
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
	/* A compile error's first build too: the evaluation's hit on the
	 * failure the pool's build kept is not what it cost. */
	char *bad = kf_path_join(kf_test_tmpdir(), "syntax.c");
	CHECK(kf_file_write_atomic(bad, "int kf_entry(void) { return 0 +; }\n",
				   35, &err) == 0);
	struct kf_farm_item b = {.candidate = bad};
	CHECK_MSG(kf_farm_run(ROWSUM, &b, 1, &o, &err) == 0, "%s", err.msg);
	CHECK(b.rc == 0 && b.compile_s > 0);
	CHECK_STR(kf_json_str(b.result, "status"), "compile_error");
	c = cJSON_GetObjectItem(cJSON_GetObjectItem(b.result, "compile"),
				"candidate");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(c, "cached")));
	CHECK(cJSON_GetObjectItem(c, "seconds")->valuedouble == b.compile_s);
	cJSON_Delete(b.result);
	free(bad);
	/* A failure that is not kept (the machine's: here a compiler that
	 * says its disk is full after 3 s) is built once, by the farm: the
	 * evaluation takes that build (it was built twice, a timeout's 2 x
	 * 120 s). */
	char *script = kf_xasprintf(
	    "#!/bin/sh\n"
	    "case \"$*\" in\n"
	    "--version) echo 'full-cc 1.0'; exit 0;;\n"
	    "*diskfull*) sleep 3; echo 'fatal error: No space left on device'"
	    " >&2; exit 1;;\n"
	    "esac\n"
	    "exec %s \"$@\"\n",
	    "/usr/bin/cc");
	char *cc = kf_path_join(kf_test_tmpdir(), "full-cc");
	CHECK(kf_file_write_atomic(cc, script, strlen(script), &err) == 0);
	CHECK(chmod(cc, 0755) == 0);
	CHECK(setenv("KFORGE_CC", cc, 1) == 0);
	char *full = kf_path_join(kf_test_tmpdir(), "diskfull.c");
	CHECK(kf_file_write_atomic(full, "int x;\n", 7, &err) == 0);
	struct kf_farm_item d = {.candidate = full};
	CHECK_MSG(kf_farm_run(ROWSUM, &d, 1, &o, &err) == 0, "%s", err.msg);
	CHECK_STR(kf_json_str(d.result, "status"), "compile_error");
	CHECK_MSG(d.compile_s >= 3 && d.eval_s < d.compile_s / 2,
		  "compile %.2f s, evaluation %.2f s", d.compile_s, d.eval_s);
	unsetenv("KFORGE_CC");
	cJSON_Delete(d.result);
	free(full);
	free(cc);
	free(script);
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

/* ---- the executor (include/kforge/exec.h) ---- */

static struct kf_exec *exec_open(const char *kind, int slots)
{
	struct kf_exec_opts o = KF_EXEC_OPTS_INIT;
	o.kind = kind;
	o.eval.seed = 1;
	o.eval.no_timing = true;
	o.eval.include_dir = "include";
	o.eval.mem_limit_bytes = 1ull << 30;
	o.slots = slots;
	struct kf_exec *x = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_exec_open(&o, &x, &err) == 0, "%s", err.msg);
	CHECK_STR(kf_exec_kind(x), kind);
	return x;
}

/* The mixed candidates through an executor of this kind, two at a time:
 * each job's status (or "(error)") in want's order, whatever order they
 * ended in. */
static void exec_mixed(const char *kind, const char **got, char **errors)
{
	struct kf_exec *x = exec_open(kind, 2);
	struct kf_exec_job jobs[N_MIXED];
	memset(jobs, 0, sizeof(jobs));
	for (int i = 0; i < N_MIXED; i++) {
		jobs[i].task = ROWSUM;
		jobs[i].candidate = mixed[i];
		jobs[i].label = mixed[i];
		jobs[i].user = &jobs[i];
		kf_exec_submit(x, &jobs[i]);
	}
	CHECK(kf_exec_pending(x) == N_MIXED);
	int seen = 0;
	struct kf_exec_job *j;
	while ((j = kf_exec_collect(x, -1))) {
		CHECK(j->user == j);
		int i = (int)(j - jobs);
		CHECK(!j->cancelled);
		CHECK((j->result != NULL) != (j->error != NULL));
		got[i] = j->result ? kf_json_str(j->result, "status") : "(error)";
		errors[i] = j->error;
		seen++;
	}
	CHECK(seen == N_MIXED);
	CHECK(kf_exec_pending(x) == 0);
	CHECK(kf_exec_collect(x, 0) == NULL);
	kf_exec_close(x);
	/* The results stay the caller's (not freed: the test ends). */
}

/* Thread and process executors give every candidate the status a serial
 * farm gives it, and an evaluation that cannot start is that job's error,
 * naming its candidate. */
static void test_farm_exec_kinds_agree(void)
{
	use_tmp_cache();
	static const char *const want[N_MIXED] = {
	    "ok",      "runtime_error", "compile_error", "runtime_error",
	    "(error)", "wrong_answer"};
	const char *got[N_MIXED];
	char *errors[N_MIXED];
	const char *kinds[] = {"thread", "process"};
	for (int k = 0; k < 2; k++) {
		exec_mixed(kinds[k], got, errors);
		for (int i = 0; i < N_MIXED; i++)
			CHECK_MSG(!strcmp(got[i], want[i]),
				  "%s executor, %s: %s, want %s (%s)",
				  kinds[k], mixed[i], got[i], want[i],
				  errors[i] ? errors[i] : "");
		CHECK_CONTAINS(errors[4], "no_such_file.c");
	}
}

#define EXEC_SPIN                                                              \
	"#include <kforge/kernel.h>\n"                                         \
	"int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int "     \
	"n_out, void *stream) {\n"                                             \
	"  (void)in; (void)n_in; (void)out; (void)n_out; (void)stream;\n"      \
	"  for (volatile long k = 0;; k++) ;\n"                                \
	"  return 0;\n}\n"

/* A process job past its deadline, and one cancelled while it runs, end
 * within a second or two (the eval child and everything under it killed),
 * each with an error that says which. */
static void test_farm_exec_deadline_and_cancel_end_a_process_job(void)
{
	use_tmp_cache();
	char *spin = kf_path_join(kf_test_tmpdir(), "spin.c");
	kf_test_write_text(spin, EXEC_SPIN);
	struct kf_exec *x = exec_open("process", 2);
	struct kf_exec_job late, cut;
	memset(&late, 0, sizeof(late));
	memset(&cut, 0, sizeof(cut));
	late.task = cut.task = ROWSUM;
	late.candidate = cut.candidate = spin;
	late.label = "the late one";
	cut.label = "the cut one";
	uint64_t t0 = kf_now_ns();
	late.deadline_ns = t0 + 1500000000ull;
	kf_exec_submit(x, &late);
	kf_exec_submit(x, &cut);
	struct timespec ts = {1, 0};
	nanosleep(&ts, NULL);
	kf_exec_cancel(x, &cut);
	int n = 0;
	struct kf_exec_job *j;
	while ((j = kf_exec_collect(x, 10000))) {
		double s = (double)(kf_now_ns() - t0) / 1e9;
		CHECK_MSG(s < 6, "%s ended after %.1f s", j->label, s);
		CHECK(j->result == NULL);
		if (j == &cut) {
			CHECK(j->cancelled);
			CHECK_CONTAINS(j->error, "the cut one: cancelled");
		} else {
			CHECK(!j->cancelled);
			CHECK_CONTAINS(j->error, "the late one: its deadline");
		}
		n++;
	}
	CHECK(n == 2);
	kf_exec_close(x);
	free(spin);
}

/* A caller's own ops: no more jobs run at once than the executor has
 * slots; kf_exec_stop ends the queued ones at once, cancelled, and the
 * running ones as their ops can. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int running, most, started;
	bool open;
};

static void gate_run(struct kf_exec *x, void *ctx, struct kf_exec_job *j)
{
	(void)x;
	struct gate *g = ctx;
	pthread_mutex_lock(&g->lock);
	g->running++;
	g->started++;
	if (g->running > g->most)
		g->most = g->running;
	pthread_cond_broadcast(&g->cond);
	while (!g->open && !j->stop)
		pthread_cond_wait(&g->cond, &g->lock);
	g->running--;
	pthread_mutex_unlock(&g->lock);
	if (j->stop)
		j->error = kf_xstrdup("stopped while running");
	else
		j->result = cJSON_CreateObject();
}

static void gate_cancel(struct kf_exec *x, void *ctx, struct kf_exec_job *j)
{
	(void)x;
	(void)j;
	struct gate *g = ctx;
	pthread_mutex_lock(&g->lock);
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static void test_farm_exec_slots_bound_and_stop_cancels(void)
{
	static struct gate g = {PTHREAD_MUTEX_INITIALIZER,
				PTHREAD_COND_INITIALIZER, 0, 0, 0, false};
	static const struct kf_exec_ops ops = {"gate", gate_run, gate_cancel};
	struct kf_exec_opts o = KF_EXEC_OPTS_INIT;
	o.ops = &ops;
	o.ctx = &g;
	o.slots = 3;
	struct kf_exec *x = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_exec_open(&o, &x, &err) == 0);
	CHECK_STR(kf_exec_kind(x), "gate");
	struct kf_exec_job jobs[8];
	memset(jobs, 0, sizeof(jobs));
	for (int i = 0; i < 8; i++)
		kf_exec_submit(x, &jobs[i]);
	pthread_mutex_lock(&g.lock);
	while (g.running < 3)
		pthread_cond_wait(&g.cond, &g.lock);
	pthread_mutex_unlock(&g.lock);
	CHECK(kf_exec_collect(x, 200) == NULL); /* none has ended */
	kf_exec_stop(x);
	int cancelled_queued = 0, stopped_running = 0, n = 0;
	struct kf_exec_job *j;
	while ((j = kf_exec_collect(x, 5000))) {
		CHECK(j->cancelled);
		CHECK(j->result == NULL);
		if (strstr(j->error, "cancelled before it started"))
			cancelled_queued++;
		else if (strstr(j->error, "stopped while running"))
			stopped_running++;
		n++;
	}
	CHECK(n == 8);
	CHECK(g.most == 3);
	CHECK(g.started == 3);
	CHECK(stopped_running == 3 && cancelled_queued == 5);
	/* A stopped executor refuses new jobs: they end cancelled. */
	struct kf_exec_job late;
	memset(&late, 0, sizeof(late));
	kf_exec_submit(x, &late);
	CHECK(kf_exec_collect(x, 1000) == &late);
	CHECK(late.cancelled);
	CHECK_CONTAINS(late.error, "the executor is stopping");
	kf_exec_close(x);
}

/* An executor that cannot be: the kind, the executable or the URL named. */
static void test_farm_exec_open_errors_name_what(void)
{
	struct kf_exec *x = NULL;
	struct kf_err err = KF_ERR_INIT;
	struct kf_exec_opts o = KF_EXEC_OPTS_INIT;
	o.kind = "fork";
	CHECK(kf_exec_open(&o, &x, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "'fork' is not a kind");
	CHECK(x == NULL);
	o.kind = "process";
	o.exe = "/nonexistent/kforge";
	CHECK(kf_exec_open(&o, &x, &err) == KF_ENOENT);
	CHECK_CONTAINS(err.msg, "/nonexistent/kforge");
	o.kind = "redis";
	o.exe = NULL;
	CHECK(kf_exec_open(&o, &x, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "URL");
}

KF_TESTS(farm) = {
    KF_TEST(test_farm_queue_is_fifo_and_bounded),
    KF_TEST(test_farm_close_wakes_a_blocked_pusher),
    KF_TEST(test_farm_errors_stay_with_their_candidate),
    KF_TEST(test_farm_parallel_statuses_match_serial),
    KF_TEST(test_farm_result_records_the_compile),
    KF_TEST(test_farm_exec_kinds_agree),
    KF_TEST(test_farm_exec_deadline_and_cancel_end_a_process_job),
    KF_TEST(test_farm_exec_slots_bound_and_stop_cancels),
    KF_TEST(test_farm_exec_open_errors_name_what),
    KF_TEST(test_farm_item_options_are_its_own),
    KF_TEST(test_farm_missing_task_is_an_error),
    KF_TEST(test_farm_gpu_count_without_driver_is_zero),
    KF_TEST(test_farm_cli_evaluates_many_candidates),
    KF_TESTS_END,
};
