/*
 * store_test.c: the run store: a round trip of every table through a closed
 * and reopened file, WAL mode, schema versions, caps, and how a run whose
 * process is gone reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include <kforge/store.h>

#include "harness.h"

static char *db_path(void)
{
	return kf_path_join(kf_test_tmpdir(), "k.db");
}

static struct kf_store *open_ok(const char *path)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *s = NULL;
	CHECK_MSG(kf_store_open(path, 0, &s, &err) == 0, "%s", err.msg);
	return s;
}

static int64_t add_run(struct kf_store *s, int budget)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_store_run r = {
	    .task = "/t/rowsum",
	    .task_id = "fixtures/rowsum",
	    .backend = "host",
	    .policy = "tune",
	    .config = "{\"budget\": 3, \"eval\": {\"trials\": 6}}",
	    .budget = budget,
	};
	int64_t id = 0;
	CHECK_MSG(kf_store_run_add(s, &r, &id, &err) == 0, "%s", err.msg);
	CHECK(id > 0);
	return id;
}

/* A result JSON shaped like kf_eval's (docs/results.md). */
static cJSON *fake_result(const char *status, double speedup)
{
	char text[512];
	snprintf(text, sizeof(text),
		 "{\"status\": \"%s\", \"reason\": %s, \"check\": %s,"
		 " \"compile\": {\"candidate\": {\"seconds\": 0.25}},"
		 " \"timing\": {\"candidate\": {\"median\": 1.5},"
		 " \"reference\": {\"median\": 3.0}, \"speedup\": {\"median\":"
		 " %g, \"ci95\": [1.9, 2.1]}}, \"seconds\": 1.75}",
		 status, strcmp(status, "ok") ? "\"trial 0: bad\"" : "null",
		 strcmp(status, "ok") ? "\"mismatch\"" : "null", speedup);
	cJSON *r = cJSON_Parse(text);
	CHECK(r != NULL);
	return r;
}

static void test_store_round_trip(void)
{
	char *path = db_path();
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *s = open_ok(path);
	int64_t run = add_run(s, 3);
	int64_t parents[] = {7};
	struct kf_store_candidate c = {
	    .source = "int kf_entry;\n",
	    .sha256 = "aa",
	    .policy = "tune",
	    .origin = "tunable.c",
	    .params = "{\"LANES\": \"8\"}",
	};
	int64_t c1 = 0, c2 = 0;
	CHECK_MSG(kf_store_candidate_add(s, run, &c, &c1, &err) == 0, "%s",
		  err.msg);
	c.sha256 = "bb";
	c.source = "int kf_entry2;\n";
	c.parents = parents;
	c.n_parents = 1;
	c.prompt = "[{\"role\": \"user\", \"content\": \"faster\"}]";
	CHECK(kf_store_candidate_add(s, run, &c, &c2, &err) == 0);
	/* The run keys candidates by hash. */
	CHECK(kf_store_candidate_add(s, run, &c, NULL, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "UNIQUE");
	cJSON *res = fake_result("ok", 2.0);
	CHECK(kf_store_evaluation_add(s, c1, res, &err) == 0);
	CHECK(kf_store_evaluation_add(s, c1, res, &err) == KF_EINVAL);
	cJSON_Delete(res);
	struct kf_store_llm_call call = {
	    .run = run,
	    .model = "m",
	    .prompt_tokens = 11,
	    .completion_tokens = -1,
	    .latency_ms = 12.5,
	    .attempts = 2,
	    .http_status = 200,
	    .status = "ok",
	    .completions = 1,
	    .candidates = 1,
	};
	CHECK(kf_store_llm_call_add(s, &call, NULL, &err) == 0);
	CHECK(kf_store_run_set_state(s, run, "done", NULL, &err) == 0);
	kf_store_close(s);

	s = open_ok(path);
	cJSON *r = NULL;
	CHECK(kf_store_run_get(s, run, &r, &err) == 0);
	CHECK_STR(kf_json_str(r, "state"), "done");
	CHECK_STR(kf_json_str(r, "task_id"), "fixtures/rowsum");
	CHECK(kf_json_num(r, "budget", 0) == 3);
	CHECK(kf_json_num(r, "candidates", 0) == 2);
	CHECK(kf_json_num(r, "evaluated", 0) == 1);
	CHECK(kf_json_num(r, "best_speedup", 0) == 2.0);
	CHECK(kf_json_num(r, "best_candidate", 0) == (double)c1);
	CHECK(kf_json_str(r, "finished_at") != NULL);
	CHECK(kf_json_num(
		  cJSON_GetObjectItem(cJSON_GetObjectItem(r, "config"), "eval"),
		  "trials", 0) == 6);
	cJSON_Delete(r);

	cJSON *cands = NULL;
	CHECK(kf_store_candidate_list(s, run, true, true, &cands, &err) == 0);
	CHECK(cJSON_GetArraySize(cands) == 2);
	const cJSON *a = cJSON_GetArrayItem(cands, 0);
	const cJSON *b = cJSON_GetArrayItem(cands, 1);
	CHECK(kf_json_num(a, "seq", 0) == 1 && kf_json_num(b, "seq", 0) == 2);
	CHECK_STR(kf_json_str(a, "source"), "int kf_entry;\n");
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(a, "params"), "LANES"), "8");
	const cJSON *e = cJSON_GetObjectItem(a, "evaluation");
	CHECK_STR(kf_json_str(e, "status"), "ok");
	CHECK(kf_json_num(e, "speedup", 0) == 2.0);
	CHECK(kf_json_num(e, "compile_ms", 0) == 250);
	CHECK(kf_json_num(e, "candidate_ms", 0) == 1.5);
	CHECK(kf_json_num(e, "reference_ms", 0) == 3.0);
	CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "speedup_ci95"), 1)
		  ->valuedouble == 2.1);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(e, "result"), "status"),
		  "ok");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(b, "evaluation")));
	CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "parents"), 0)
		  ->valuedouble == 7);
	CHECK_CONTAINS(kf_json_str(b, "prompt"), "faster");
	cJSON_Delete(cands);

	int64_t id = 0;
	bool evaluated = true;
	CHECK(kf_store_candidate_find(s, run, "bb", &id, &evaluated, &err) ==
	      0);
	CHECK(id == c2 && !evaluated);
	CHECK(kf_store_candidate_find(s, run, "zz", &id, &evaluated, &err) ==
	      0);
	CHECK(id == 0);

	cJSON *calls = NULL;
	CHECK(kf_store_llm_call_list(s, run, &calls, &err) == 0);
	CHECK(cJSON_GetArraySize(calls) == 1);
	const cJSON *k = cJSON_GetArrayItem(calls, 0);
	CHECK(kf_json_num(k, "prompt_tokens", 0) == 11);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(k, "completion_tokens")));
	CHECK(kf_json_num(k, "latency_ms", 0) == 12.5);
	cJSON_Delete(calls);

	CHECK(kf_store_run_get(s, 99, &r, &err) == KF_ENOENT);
	CHECK_CONTAINS(err.msg, "no run 99");
	kf_store_close(s);
	free(path);
}

static void test_store_wal_mode_on(void)
{
	char *path = db_path();
	struct kf_store *s = open_ok(path);
	CHECK_STR(kf_store_journal_mode(s), "wal");
	add_run(s, 1);
	/* A second connection sees the committed run while the first is
	 * open: the write went through the WAL. */
	char *wal = kf_xasprintf("%s-wal", path);
	CHECK(kf_file_exists(wal));
	sqlite3 *db = NULL;
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	sqlite3_stmt *st = NULL;
	CHECK(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) ==
	      SQLITE_OK);
	CHECK(sqlite3_step(st) == SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM runs", -1, &st,
				 NULL) == SQLITE_OK);
	CHECK(sqlite3_step(st) == SQLITE_ROW);
	CHECK(sqlite3_column_int(st, 0) == 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	kf_store_close(s);
	free(wal);
	free(path);
}

static void test_store_schema_version_checked(void)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *s = NULL;
	char *newer = kf_path_join(kf_test_tmpdir(), "newer.db");
	sqlite3 *db = NULL;
	CHECK(sqlite3_open(newer, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db,
			   "CREATE TABLE runs (id); PRAGMA user_version "
			   "= 99",
			   NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK(kf_store_open(newer, 0, &s, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "newer.db: schema version 99 is newer");
	CHECK(s == NULL);

	char *other = kf_path_join(kf_test_tmpdir(), "other.db");
	CHECK(sqlite3_open(other, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL) ==
	      SQLITE_OK);
	sqlite3_close(db);
	CHECK(kf_store_open(other, 0, &s, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "other.db: not a kforge store");

	char *text = kf_path_join(kf_test_tmpdir(), "text.db");
	const char junk[] = "this is not a database, just text, long enough "
			    "to fill a SQLite header and then some more";
	CHECK(kf_file_write_atomic(text, junk, sizeof(junk), &err) == 0);
	CHECK(kf_store_open(text, 0, &s, &err) != 0);
	CHECK_CONTAINS(err.msg, "text.db: not a kforge store");

	/* A store of this version opens again. */
	char *path = db_path();
	kf_store_close(open_ok(path));
	s = open_ok(path);
	kf_store_close(s);
	free(path);
	free(text);
	free(other);
	free(newer);
}

static void test_store_caps_and_missing_status(void)
{
	char *path = db_path();
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *s = open_ok(path);
	int64_t run = add_run(s, 1);
	char *big = kf_xmalloc(KF_STORE_SOURCE_CAP + 2);
	memset(big, 'x', KF_STORE_SOURCE_CAP + 1);
	big[KF_STORE_SOURCE_CAP + 1] = '\0';
	struct kf_store_candidate c = {
	    .source = big, .sha256 = "cc", .policy = "replay"};
	CHECK(kf_store_candidate_add(s, run, &c, NULL, &err) == KF_ERANGE);
	CHECK_CONTAINS(err.msg, "over the store's cap");
	c.source = "x";
	int64_t id = 0;
	CHECK(kf_store_candidate_add(s, run, &c, &id, &err) == 0);
	cJSON *res = cJSON_Parse("{\"reason\": null}");
	CHECK(kf_store_evaluation_add(s, id, res, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "has no status");
	cJSON_Delete(res);
	kf_store_close(s);
	free(big);
	free(path);
}

static void test_store_run_of_a_dead_process_reads_interrupted(void)
{
	char *path = db_path();
	struct kf_err err = KF_ERR_INIT;
	pid_t pid = fork();
	if (pid == 0) {
		struct kf_store *s = NULL;
		if (kf_store_open(path, 0, &s, &err))
			_exit(1);
		add_run(s, 5);
		_exit(0); /* without closing or finishing the run */
	}
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	struct kf_store *s = open_ok(path);
	cJSON *runs = NULL;
	CHECK(kf_store_run_list(s, &runs, &err) == 0);
	CHECK(cJSON_GetArraySize(runs) == 1);
	CHECK_STR(kf_json_str(cJSON_GetArrayItem(runs, 0), "state"),
		  "interrupted");
	cJSON_Delete(runs);
	/* This process takes it over: running again. */
	CHECK(kf_store_run_set_state(s, 1, "running", NULL, &err) == 0);
	cJSON *r = NULL;
	CHECK(kf_store_run_get(s, 1, &r, &err) == 0);
	CHECK_STR(kf_json_str(r, "state"), "running");
	cJSON_Delete(r);
	CHECK(kf_store_run_set_state(s, 1, "failed", "why", &err) == 0);
	CHECK(kf_store_run_get(s, 1, &r, &err) == 0);
	CHECK_STR(kf_json_str(r, "state"), "failed");
	CHECK_STR(kf_json_str(r, "note"), "why");
	cJSON_Delete(r);
	kf_store_close(s);
	free(path);
}

KF_TESTS(store) = {
    KF_TEST(test_store_round_trip),
    KF_TEST(test_store_wal_mode_on),
    KF_TEST(test_store_schema_version_checked),
    KF_TEST(test_store_caps_and_missing_status),
    KF_TEST(test_store_run_of_a_dead_process_reads_interrupted),
    KF_TESTS_END,
};
