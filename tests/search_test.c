/*
 * search_test.c: `kforge optimize` as a user runs it on the host backend:
 * KF_PARAM, the tuner, replay, resume after SIGKILL, the LLM policy against
 * the scripted server, time limits, and runs, show and export.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/policy.h>
#include <kforge/store.h>

#include "chat_server.h"
#include "harness.h"

#define ROWSUM "tests/fixtures/rowsum"
#define TUNABLE "tasks/reduction/row_sum/candidates/tunable.c"

struct outcome {
	int code;
	char *out; /* stdout and stderr together */
};

/* Runs build/kforge with the arguments of a NULL-terminated list. */
static struct outcome kforge_v(const char *const *args)
{
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	free(cache);
	int ec = 0;
	char *out = kf_test_kforge(args, 240000, 4 << 20, &ec);
	return (struct outcome){ec, out};
}

#define KFORGE(...) kforge_v((const char *const[]){__VA_ARGS__, NULL})

static char *db(void)
{
	return kf_path_join(kf_test_tmpdir(), "k.db");
}

/* The pretty-printed JSON object that ends the output; caller frees. */
static cJSON *last_json(const char *out)
{
	const char *start = NULL;
	for (const char *p = out; (p = strstr(p, "{\n")); p++)
		if (p == out || p[-1] == '\n') {
			start = p;
			break;
		}
	CHECK_MSG(start != NULL, "no JSON in: %s", out);
	const char *end = strstr(start, "\n}");
	CHECK(end != NULL);
	char *text = kf_xstrdup(start);
	text[end - start + 2] = '\0';
	cJSON *j = cJSON_Parse(text);
	CHECK_MSG(j != NULL, "not JSON: %s", text);
	free(text);
	return j;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	struct kf_err err = KF_ERR_INIT;
	char *p = kf_path_join(dir, name);
	CHECK(kf_mkdir_p(dir, &err) == 0);
	CHECK(kf_file_write_atomic(p, text, strlen(text), &err) == 0);
	free(p);
}

static void test_search_params_parse_and_apply(void)
{
	const char *src = "#include <kforge/kernel.h>\n"
			  "  KF_PARAM(LANES, 1, 8, 32);\n"
			  "KF_PARAM(MODE,fast,slow) /* which */\n"
			  "int x = LANES;\n";
	struct kf_params ps;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_policy_params_parse(src, "k.c", &ps, &err) == 0, "%s",
		  err.msg);
	CHECK(ps.n == 2);
	CHECK_STR(ps.p[0].name, "LANES");
	CHECK(ps.p[0].n_values == 3 && ps.p[0].line == 2);
	CHECK_STR(ps.p[0].values[2], "32");
	CHECK_STR(ps.p[1].values[1], "slow");
	CHECK(kf_policy_params_space(&ps) == 6);
	int idx[] = {1, 0};
	char *out = kf_policy_params_apply(src, &ps, idx);
	CHECK_STR(out, "#include <kforge/kernel.h>\n"
		       "#define LANES 8 /* KF_PARAM(LANES, 1, 8, 32) */\n"
		       "#define MODE fast /* KF_PARAM(MODE,fast,slow) */\n"
		       "int x = LANES;\n");
	/* A concrete source declares nothing more to tune. */
	CHECK(kf_policy_params_parse(out, "k.c", &ps, &err) == 0 && ps.n == 0);
	free(out);
	cJSON *j = kf_policy_params_json(&ps, idx);
	cJSON_Delete(j);

	const char *bad[][2] = {
	    {"KF_PARAM(1X, 2)\n", "k.c:1: KF_PARAM: expected a name"},
	    {"\nKF_PARAM(A, 2, 2)\n", "k.c:2: KF_PARAM(A): value '2' is "
				      "listed twice"},
	    {"KF_PARAM(A, 2\n", "k.c:1: KF_PARAM(A: expected ',' or ')'"},
	    {"KF_PARAM(A)\n", "k.c:1: KF_PARAM(A): no values"},
	    {"KF_PARAM(A, 1, )\n", "k.c:1: KF_PARAM(A): value 2 is empty"},
	    {"KF_PARAM(A, 1) int y;\n", "unexpected text after ')'"},
	    {"KF_PARAM(A, 1)\nKF_PARAM(A, 2)\n",
	     "k.c:2: KF_PARAM(A) is declared again (first on line 1)"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(kf_policy_params_parse(bad[i][0], "k.c", &ps, &err) ==
		      KF_EINVAL);
		CHECK_CONTAINS(err.msg, bad[i][1]);
	}
}

/* The tunable built-in candidate compiles as written (its defaults). */
static void test_search_tunable_candidate_passes_untuned(void)
{
	struct outcome o =
	    KFORGE("eval", ROWSUM, TUNABLE, "--no-timing", "--seed", "3");
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "status     ok");
	free(o.out);
}

static void test_search_tune_improves_over_reference(void)
{
	char *path = db();
	struct outcome o =
	    KFORGE("optimize", ROWSUM, "--from", TUNABLE, "--budget", "6",
		   "--time-cap", "0.3", "--seed", "7", "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "run 1: fixtures/rowsum (host), policy tune");
	CHECK_CONTAINS(o.out, "[6/6] #");
	cJSON *rep = last_json(o.out);
	const cJSON *best = cJSON_GetObjectItem(rep, "best");
	const cJSON *e = cJSON_GetObjectItem(best, "evaluation");
	CHECK_STR(kf_json_str(e, "status"), "ok");
	CHECK_MSG(kf_json_num(e, "speedup", 0) > 1.0, "best speedup %g",
		  kf_json_num(e, "speedup", 0));
	CHECK(kf_json_str(cJSON_GetObjectItem(best, "params"), "LANES"));
	CHECK(kf_json_num(rep, "evaluated", 0) == 6);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(rep, "run"), "state"),
		  "done");
	/* Six distinct concrete sources, every one a tuned choice. */
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *st = NULL;
	CHECK(kf_store_open(path, 0, &st, &err) == 0);
	cJSON *cands = NULL;
	CHECK(kf_store_candidate_list(st, 1, true, false, &cands, &err) == 0);
	CHECK(cJSON_GetArraySize(cands) == 6);
	const cJSON *c;
	cJSON_ArrayForEach(c, cands)
	{
		CHECK_CONTAINS(kf_json_str(c, "source"), "#define LANES ");
		CHECK_STR(kf_json_str(c, "policy"), "tune");
	}
	cJSON_Delete(cands);
	kf_store_close(st);
	double best_speedup = kf_json_num(e, "speedup", 0);
	cJSON_Delete(rep);
	free(o.out);

	/* What the user reads afterwards: the table of show. */
	o = KFORGE("show", "1", "--db", path);
	CHECK_MSG(o.code == 0, "%s", o.out);
	char want[96];
	snprintf(want, sizeof(want), "best       candidate ");
	CHECK_CONTAINS(o.out, want);
	snprintf(want, sizeof(want), "%.3fx [", best_speedup);
	CHECK_CONTAINS(o.out, want);
	CHECK_CONTAINS(o.out, "status ok (LANES=");
	CHECK_CONTAINS(o.out, "statuses   ok 6");
	free(o.out);
	o = KFORGE("show", "1", "--db", path, "--source");
	CHECK(o.code == 0);
	CHECK_CONTAINS(o.out, "#define LANES ");
	CHECK_CONTAINS(o.out, "int kf_entry(");
	free(o.out);
	o = KFORGE("runs", "--db", path);
	CHECK(o.code == 0);
	CHECK_CONTAINS(o.out, "fixtures/rowsum");
	CHECK_CONTAINS(o.out, "6/6");
	CHECK_CONTAINS(o.out, " done ");
	free(o.out);
	free(path);
}

static void test_search_replay_directory(void)
{
	char *dir = kf_path_join(kf_test_tmpdir(), "cands");
	const char *names[] = {"same.c", "partial.c", "syntax.c"};
	for (size_t i = 0; i < 3; i++) {
		char *p = kf_path_join(ROWSUM "/candidates", names[i]);
		char *t = kf_test_read_text(p);
		write_file(dir, names[i], t);
		free(t);
		free(p);
	}
	write_file(dir, "notes.txt", "not a candidate");
	char *path = db();
	struct outcome o =
	    KFORGE("optimize", ROWSUM, "--policy", "replay", "--from", dir,
		   "--budget", "10", "--parallel", "2", "--time-cap", "0.2",
		   "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	/* Progress lines (not a terminal): status and check, the best so
	 * far, the time left, and a failure's whole reason below. */
	CHECK_CONTAINS(o.out, " wrong_answer/unwritten  best ");
	CHECK_CONTAINS(o.out, " compile_error/compile  best ");
	CHECK_CONTAINS(o.out, " left\n    trial ");
	CHECK_CONTAINS(o.out, "were not written (they still hold the poison "
			      "value)\n");
	/* The compiler's message names the candidate, not the cache file it
	 * was evaluated from. */
	CHECK_CONTAINS(o.out, "\n    candidate-");
	CHECK_CONTAINS(o.out, ".c:8:17: error: expected");
	CHECK(!strstr(o.out, "/candidates/"));
	cJSON *rep = last_json(o.out);
	const cJSON *bs = cJSON_GetObjectItem(rep, "by_status");
	CHECK(kf_json_num(bs, "ok", 0) == 1);
	CHECK(kf_json_num(bs, "wrong_answer", 0) == 1);
	CHECK(kf_json_num(bs, "compile_error", 0) == 1);
	CHECK(kf_json_num(rep, "evaluated", 0) == 3);
	const cJSON *run = cJSON_GetObjectItem(rep, "run");
	CHECK_STR(kf_json_str(run, "state"), "done");
	CHECK_CONTAINS(kf_json_str(run, "note"), "nothing more to propose");
	CHECK_CONTAINS(kf_json_str(cJSON_GetObjectItem(rep, "best"), "origin"),
		       "same.c");
	CHECK(kf_json_num(rep, "failed_total", 0) == 2);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "failed")) == 2);
	cJSON_Delete(rep);
	free(o.out);
	/* kforge show gives each failed candidate's whole reason. */
	o = KFORGE("show", "1", "--db", path);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "failed     2 candidates\n");
	CHECK_CONTAINS(o.out, "wrong_answer/unwritten");
	CHECK_CONTAINS(o.out, "32 of 64 elements were not written");
	CHECK_CONTAINS(o.out, "compile_error/compile");
	CHECK_CONTAINS(o.out, "error: expected");
	free(o.out);
	free(path);
	free(dir);
}

#define KB_RELU "tests/data/kernelbench/level1/1_ReLU.py"
#define KB_CANDS "tests/data/kernelbench/candidates/1_ReLU/"

/* optimize over a directory of KernelBench-format tasks: a suite, one run
 * per task (levelN/ of a KernelBench checkout), each replaying its own
 * candidates from FROM/<file> or the directory FROM/<stem>; a task with
 * none is listed and left; the same command again keeps finished runs and
 * resumes a stopped one; --level keeps its level; the tuner, --level on
 * one task and an empty directory are refused with the reason. */
static void test_search_suite_over_kernelbench_directory(void)
{
	kf_test_need_torch();
	char *tasks = kf_path_join(kf_test_tmpdir(), "suite/tasks");
	char *l1 = kf_path_join(tasks, "level1");
	char *l2 = kf_path_join(tasks, "level2");
	char *from = kf_path_join(kf_test_tmpdir(), "suite/from");
	char *relu_dir = kf_path_join(from, "1_ReLU");
	const struct {
		const char *dir, *name, *src;
	} files[] = {
	    {l1, "1_ReLU.py", KB_RELU},
	    {l1, "3_Sum_reduction.py",
	     "tests/data/kernelbench/level1/3_Sum_reduction.py"},
	    {l2, "26_Linear_ReLU_scale.py",
	     "tests/data/kernelbench/level2/26_Linear_ReLU_scale.py"},
	    {relu_dir, "correct.py", KB_CANDS "correct.py"},
	    {relu_dir, "wrong.py", KB_CANDS "wrong.py"},
	    {from, "3_Sum_reduction.py",
	     "tests/data/kernelbench/modelnew/3_Sum_reduction.py"},
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *t = kf_test_read_text(files[i].src);
		write_file(files[i].dir, files[i].name, t);
		free(t);
	}
	char *path = kf_path_join(kf_test_tmpdir(), "suite.db");
	struct outcome o = KFORGE("optimize", tasks, "--policy", "replay",
				  "--from", from, "--budget", "4", "--time-cap",
				  "0.2", "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "suite tasks: 3 KernelBench-format tasks");
	cJSON *rep = last_json(o.out);
	CHECK_STR(kf_json_str(rep, "suite"), "tasks");
	CHECK(kf_json_num(rep, "tasks", 0) == 3);
	CHECK(kf_json_num(rep, "done", 0) == 2);
	CHECK(kf_json_num(rep, "with_correct", 0) == 2);
	const cJSON *runs = cJSON_GetObjectItem(rep, "runs");
	CHECK(cJSON_GetArraySize(runs) == 3);
	/* Sorted by level, then number. */
	const cJSON *r0 = cJSON_GetArrayItem(runs, 0);
	const cJSON *r1 = cJSON_GetArrayItem(runs, 1);
	const cJSON *r2 = cJSON_GetArrayItem(runs, 2);
	CHECK_STR(kf_json_str(r0, "task"), "level1/1_ReLU");
	CHECK(kf_json_num(r0, "evaluated", 0) == 2); /* correct and wrong */
	CHECK_STR(kf_json_str(r1, "task"), "level1/3_Sum_reduction");
	CHECK(kf_json_num(r1, "evaluated", 0) == 1);
	CHECK_STR(kf_json_str(r2, "task"), "level2/26_Linear_ReLU_scale");
	CHECK_CONTAINS(kf_json_str(r2, "note"), "no candidates for it in");
	double run0 = kf_json_num(r0, "run", 0);
	cJSON_Delete(rep);
	free(o.out);
	/* Again: nothing evaluated twice. */
	o = KFORGE("optimize", tasks, "--policy", "replay", "--from", from,
		   "--budget", "4", "--time-cap", "0.2", "--db", path);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "done earlier");
	CHECK(!strstr(o.out, "[1/4]"));
	CHECK_CONTAINS(o.out, "level1/1_ReLU");
	free(o.out);
	/* --level 1 of the same suite: its runs, no new one. */
	o = KFORGE("optimize", tasks, "--level", "1", "--policy", "replay",
		   "--from", from, "--budget", "4", "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	rep = last_json(o.out);
	CHECK(kf_json_num(rep, "tasks", 0) == 2);
	CHECK(kf_json_num(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "runs"),
					     0),
			  "run", 0) == run0);
	cJSON_Delete(rep);
	free(o.out);
	/* Refused, with the reason. */
	o = KFORGE("optimize", tasks, "--db", path);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "over KernelBench-format tasks give --policy "
			      "replay or llm");
	free(o.out);
	o = KFORGE("optimize", ROWSUM, "--level", "1", "--db", path);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "--level applies to a directory of "
			      "KernelBench-format tasks");
	free(o.out);
	char *empty = kf_path_join(kf_test_tmpdir(), "suite/empty");
	struct kf_err err = KF_ERR_INIT;
	CHECK(kf_mkdir_p(empty, &err) == 0);
	o = KFORGE("optimize", empty, "--policy", "replay", "--db", path);
	CHECK(o.code == 2);
	CHECK_CONTAINS(o.out, "no KernelBench-format task (N_Name.py) found");
	free(o.out);
	free(empty);
	free(path);
	free(tasks);
	free(l1);
	free(l2);
	free(from);
	free(relu_dir);
}

/* A KernelBench-format task: the .py files of a directory are ModelNew
 * candidates, stored and evaluated as Python. */
static void test_search_replay_kernelbench_directory(void)
{
	kf_test_need_torch();
	char *dir = kf_path_join(kf_test_tmpdir(), "kbcands");
	const char *names[] = {"correct.py", "wrong.py", "syntax.py"};
	for (size_t i = 0; i < 3; i++) {
		char *t =
		    kf_test_read_text(names[i][0] == 'c'   ? KB_CANDS "correct.py"
			      : names[i][0] == 'w' ? KB_CANDS "wrong.py"
						   : KB_CANDS "syntax.py");
		write_file(dir, names[i], t);
		free(t);
	}
	write_file(dir, "kernel.c", "not for this task");
	char *path = db();
	struct outcome o = KFORGE("optimize", KB_RELU, "--policy", "replay",
				  "--from", dir, "--budget", "5", "--time-cap",
				  "0.2", "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	cJSON *rep = last_json(o.out);
	const cJSON *bs = cJSON_GetObjectItem(rep, "by_status");
	CHECK_MSG(kf_json_num(bs, "ok", 0) == 1, "%s", o.out);
	CHECK(kf_json_num(bs, "wrong_answer", 0) == 1);
	CHECK(kf_json_num(bs, "load_error", 0) == 1);
	CHECK(kf_json_num(rep, "evaluated", 0) == 3);
	CHECK_CONTAINS(kf_json_str(cJSON_GetObjectItem(rep, "best"), "origin"),
		       "correct.py");
	cJSON_Delete(rep);
	free(o.out);
	free(path);
	free(dir);
}

/* CUDA-L1's released kernels: one JSONL for every task, "custom_code" per
 * "level_id" and "task_id" (null where it has none); only this task's
 * lines are replayed. */
static void test_search_replay_cuda_l1_jsonl(void)
{
	kf_test_need_torch();
	char *good = kf_test_read_text(KB_CANDS "correct.py");
	char *wrong = kf_test_read_text(KB_CANDS "wrong.py");
	cJSON *a = cJSON_CreateObject();
	cJSON_AddNumberToObject(a, "level_id", 1);
	cJSON_AddNumberToObject(a, "task_id", 1);
	cJSON_AddStringToObject(a, "custom_code", good);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "level_id", 1);
	cJSON_AddNumberToObject(b, "task_id", 2);
	cJSON_AddStringToObject(b, "custom_code", wrong);
	cJSON *c = cJSON_CreateObject();
	cJSON_AddNumberToObject(c, "level_id", 2);
	cJSON_AddNumberToObject(c, "task_id", 1);
	cJSON_AddStringToObject(c, "custom_code", wrong);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "level_id", 1);
	cJSON_AddNumberToObject(d, "task_id", 1);
	cJSON_AddNullToObject(d, "custom_code");
	char *ta = cJSON_PrintUnformatted(a), *tb = cJSON_PrintUnformatted(b);
	char *tc = cJSON_PrintUnformatted(c), *td = cJSON_PrintUnformatted(d);
	char *text = kf_xasprintf("%s\n%s\n%s\n%s\n", tb, ta, tc, td);
	write_file(kf_test_tmpdir(), "cuda_l1.jsonl", text);
	char *jsonl = kf_path_join(kf_test_tmpdir(), "cuda_l1.jsonl");
	char *path = db();
	struct outcome o =
	    KFORGE("optimize", KB_RELU, "--policy", "replay", "--from", jsonl,
		   "--budget", "5", "--time-cap", "0.2", "--db", path);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "2 lines for other tasks left out");
	char want[600];
	snprintf(want, sizeof(want),
		 "%s:4: no string \"code\", \"source\" or \"custom_code\": "
		 "skipped",
		 jsonl);
	CHECK_CONTAINS(o.out, want);
	CHECK_CONTAINS(o.out, "budget     5 evaluations: 1 done, 1 "
			      "candidates stored");
	CHECK_CONTAINS(o.out, "statuses   ok 1");
	free(o.out);
	free(path);
	free(jsonl);
	free(text);
	free(ta), free(tb), free(tc), free(td);
	cJSON_Delete(a), cJSON_Delete(b), cJSON_Delete(c), cJSON_Delete(d);
	free(wrong);
	free(good);
}

static void test_search_replay_jsonl_reports_bad_lines(void)
{
	char *p = kf_path_join(ROWSUM "/candidates", "same.c");
	char *same = kf_test_read_text(p);
	free(p);
	cJSON *line = cJSON_CreateObject();
	cJSON_AddStringToObject(line, "code", same);
	char *good = kf_json_print(line);
	cJSON_Delete(line);
	line = cJSON_CreateObject();
	cJSON_AddStringToObject(line, "source", same);
	char *again = kf_json_print(line);
	cJSON_Delete(line);
	char *text = kf_xasprintf("%s\nnot json\n{\"x\": 1}\n\n[1, 2]\n"
				  "{\"code\": \"\"}\n%s\n",
				  good, again);
	write_file(kf_test_tmpdir(), "c.jsonl", text);
	char *jsonl = kf_path_join(kf_test_tmpdir(), "c.jsonl");
	char *path = db();
	struct outcome o =
	    KFORGE("optimize", ROWSUM, "--policy", "replay", "--from", jsonl,
		   "--budget", "5", "--time-cap", "0.2", "--db", path);
	CHECK_MSG(o.code == 0, "%s", o.out);
	char want[600];
	snprintf(want, sizeof(want), "%s:2: not JSON: skipped", jsonl);
	CHECK_CONTAINS(o.out, want);
	snprintf(want, sizeof(want),
		 "%s:3: no string \"code\", \"source\" or \"custom_code\": "
		 "skipped",
		 jsonl);
	CHECK_CONTAINS(o.out, want);
	snprintf(want, sizeof(want), "%s:5: not a JSON object: skipped", jsonl);
	CHECK_CONTAINS(o.out, want);
	snprintf(want, sizeof(want), "%s:6: empty code: skipped", jsonl);
	CHECK_CONTAINS(o.out, want);
	/* Line 7 repeats line 1's source: evaluated once. */
	CHECK_CONTAINS(o.out, "budget     5 evaluations: 1 done, 1 "
			      "candidates stored");
	CHECK_CONTAINS(o.out, "statuses   ok 1");
	free(o.out);

	o = KFORGE("export", "1", "--format", "jsonl", "--db", path);
	CHECK_MSG(o.code == 0, "%s", o.out);
	int lines = 0;
	for (char *l = strtok(o.out, "\n"); l; l = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(l);
		CHECK_MSG(j != NULL, "export line %d is not JSON", lines + 1);
		if (lines == 0) {
			CHECK_STR(kf_json_str(cJSON_GetObjectItem(j, "run"),
					      "policy"),
				  "replay");
		} else {
			CHECK_STR(kf_json_str(j, "source"), same);
			snprintf(want, sizeof(want), "%s:1", jsonl);
			CHECK_STR(kf_json_str(j, "origin"), want);
			const cJSON *res = cJSON_GetObjectItem(
			    cJSON_GetObjectItem(j, "evaluation"), "result");
			CHECK_STR(kf_json_str(res, "status"), "ok");
			CHECK(cJSON_GetObjectItem(res, "timing") != NULL);
		}
		cJSON_Delete(j);
		lines++;
	}
	CHECK(lines == 2);
	free(o.out);
	free(text);
	free(good);
	free(again);
	free(same);
	free(jsonl);
	free(path);
}

/* Evaluated candidates of run 1: "id sha created_at" lines; caller frees. */
static char *evaluated_list(const char *path, int *n)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_store *st = NULL;
	CHECK_MSG(kf_store_open(path, 0, &st, &err) == 0, "%s", err.msg);
	cJSON *cands = NULL;
	*n = 0;
	struct kf_strbuf sb = KF_STRBUF_INIT;
	if (kf_store_candidate_list(st, 1, false, false, &cands, &err) == 0) {
		const cJSON *c;
		cJSON_ArrayForEach(c, cands)
		{
			const cJSON *e = cJSON_GetObjectItem(c, "evaluation");
			if (!cJSON_IsObject(e))
				continue;
			(*n)++;
			kf_strbuf_addf(
			    &sb, "%.0f %s %s %s\n", kf_json_num(c, "id", 0),
			    kf_json_str(c, "sha256"), kf_json_str(e, "status"),
			    kf_json_str(e, "created_at"));
		}
	}
	cJSON_Delete(cands);
	kf_store_close(st);
	return kf_strbuf_detach(&sb);
}

static void test_search_resume_after_sigkill_loses_nothing(void)
{
	char *path = db();
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	char *exe = kf_path_join(kf_test_build_dir(), "kforge");
	char *argv[] = {exe,	 "optimize", ROWSUM, "--from",
			TUNABLE, "--budget", "7",    "--time-cap",
			"0.2",	 "--seed",   "11",   "--db",
			path,	 NULL};
	struct kf_proc p = KF_PROC_INIT;
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(kf_proc_spawn(&p, argv, NULL, -1, &err) == 0, "%s", err.msg);
	/* Kill it once two evaluations are in the store. */
	int n = 0;
	char *before = NULL;
	for (int i = 0; i < 600 && n < 2; i++) {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
		if (!kf_file_exists(path))
			continue;
		free(before);
		before = evaluated_list(path, &n);
	}
	CHECK_MSG(n >= 2, "no evaluation within 60 s");
	kill(p.pid, SIGKILL);
	int status = 0;
	kf_proc_wait(&p, 10000, &status, NULL);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* What the store held at the kill (it may have committed one more
	 * between the read and the kill). */
	free(before);
	before = evaluated_list(path, &n);
	CHECK(n >= 2 && n < 7);

	struct outcome o = KFORGE("runs", "--db", path);
	CHECK_CONTAINS(o.out, "interrupted");
	free(o.out);
	o = KFORGE("optimize", "--resume", "1", "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	char want[96];
	snprintf(want, sizeof(want),
		 "resuming run 1: fixtures/rowsum (host), "
		 "policy tune, %d of 7 evaluations done",
		 n);
	CHECK_CONTAINS(o.out, want);
	snprintf(want, sizeof(want), "[%d/7] #", n + 1);
	CHECK_CONTAINS(o.out, want);
	CHECK_CONTAINS(o.out, "[7/7] #");
	cJSON *rep = last_json(o.out);
	CHECK(kf_json_num(rep, "evaluated", 0) == 7);
	CHECK(kf_json_num(rep, "pending", 0) == 0);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(rep, "run"), "state"),
		  "done");
	cJSON_Delete(rep);
	free(o.out);
	/* Every evaluation from before the kill is still there, unchanged
	 * (same candidate, hash, status, time), and nothing was evaluated
	 * twice (the store keys candidates by hash). */
	int m = 0;
	char *after = evaluated_list(path, &m);
	CHECK(m == 7);
	for (char *l = strtok(before, "\n"); l; l = strtok(NULL, "\n"))
		CHECK_CONTAINS(after, l);
	free(after);
	free(before);
	/* A finished run resumed again has nothing left to do. */
	o = KFORGE("optimize", "--resume", "1", "--db", path);
	CHECK_MSG(o.code == 0, "%s", o.out);
	CHECK_CONTAINS(o.out, "run 1 is finished: fixtures/rowsum (host), "
			      "policy tune, 7 of 7 evaluations done; nothing "
			      "to resume");
	CHECK(!strstr(o.out, "resuming"));
	CHECK_CONTAINS(o.out, "budget     7 evaluations: 7 done");
	free(o.out);
	free(exe);
	free(cache);
	free(path);
}

static void test_search_time_limit_stops_resumably(void)
{
	char *path = db();
	struct outcome o = KFORGE("optimize", ROWSUM, "--from", TUNABLE,
				  "--budget", "20", "--time-cap", "0.2",
				  "--time-limit", "1", "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	cJSON *rep = last_json(o.out);
	const cJSON *run = cJSON_GetObjectItem(rep, "run");
	CHECK_STR(kf_json_str(run, "state"), "stopped");
	CHECK_STR(kf_json_str(run, "note"), "time limit of 1 s reached");
	double n = kf_json_num(rep, "evaluated", 0);
	CHECK_MSG(n >= 1 && n < 20, "%g evaluations", n);
	cJSON_Delete(rep);
	free(o.out);
	free(path);
}

static void test_search_cli_errors_name_the_flag(void)
{
	char *path = db();
	struct {
		const char *args[10];
		const char *want;
	} cases[] = {
	    {{"optimize", NULL}, "optimize: expected TASK"},
	    {{"optimize", ROWSUM, "--policy", "nope", NULL},
	     "--policy: unknown policy 'nope'"},
	    {{"optimize", ROWSUM, "--budget", "0", NULL},
	     "--budget: 0 is out of range"},
	    {{"optimize", ROWSUM, NULL},
	     "tests/fixtures/rowsum has no candidates/tunable.c: give --from"},
	    {{"optimize", ROWSUM, "--from", ROWSUM "/candidates/same.c", "--db",
	      path, NULL},
	     "same.c: declares no KF_PARAM: nothing to tune"},
	    {{"optimize", ROWSUM, "--policy", "replay", "--from", "nope",
	      "--db", path, NULL},
	     "--from: nope: no such file or directory"},
	    {{"optimize", "--resume", "1", "--backend", "cuda", NULL},
	     "--backend: a resumed run keeps its own settings"},
	    {{"optimize", ROWSUM, "--frobnicate", NULL},
	     "unknown option '--frobnicate'"},
	    {{"show", "x", "--db", path, NULL}, "show: 'x' is not a run id"},
	    {{"show", "99", "--db", path, NULL}, "no run 99"},
	    {{"export", "1", "--format", "csv", "--db", path, NULL},
	     "--format: 'csv' is not a format"},
	    {{"runs", "--db", "/nonexistent/k.db", NULL},
	     "/nonexistent/k.db: no such store"},
	    {{"optimize", "--resume", "1", "--db", path, NULL}, "no run 1"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct outcome o = kforge_v(cases[i].args);
		CHECK_MSG(o.code == 2, "case %zu exited %d: %s", i, o.code,
			  o.out);
		CHECK_CONTAINS(o.out, cases[i].want);
		free(o.out);
	}
	const char *cmds[] = {"optimize", "runs", "show", "export"};
	for (size_t i = 0; i < 4; i++) {
		struct outcome o = KFORGE(cmds[i], "--help");
		CHECK(o.code == 0);
		char want[64];
		snprintf(want, sizeof(want), "usage: kforge %s", cmds[i]);
		CHECK_CONTAINS(o.out, want);
		free(o.out);
	}
	free(path);
}

/* Starts the scripted chat server with replies[0..n) as its answers, in
 * order, with no API key in the environment; returns its script (caller
 * frees). */
static char *scripted_server(const char *const *replies, int n,
			     struct kf_test_chat_server *srv)
{
	cJSON *script = cJSON_CreateObject();
	cJSON *steps = cJSON_AddArrayToObject(script, "steps");
	for (int i = 0; i < n; i++) {
		cJSON *st = cJSON_CreateObject();
		cJSON_AddStringToObject(st, "content", replies[i]);
		cJSON_AddItemToArray(steps, st);
	}
	char *stext = kf_json_print(script);
	cJSON_Delete(script);
	kf_test_chat_server_start(srv, stext, 120);
	unsetenv("KFORGE_LLM_API_KEY");
	unsetenv("OPENAI_API_KEY");
	return stext;
}

/* The llm policy on a KernelBench-format task: the prompt shows the
 * task's program and asks for ModelNew in a python block; the replies'
 * python blocks are the candidates (a reply with C only has none). */
static void test_search_llm_policy_kernelbench(void)
{
	kf_test_need_torch();
	char *good = kf_test_read_text(KB_CANDS "correct.py");
	char *wrong = kf_test_read_text(KB_CANDS "wrong.py");
	char *r1 = kf_xasprintf("Analysis: ...\n```python\n%s```\n", good);
	char *r3 = kf_xasprintf("Again:\n```python\n%s```\n", wrong);
	const char *replies[] = {
	    r1, "```c\nint kf_entry(void) { return 0; }\n```\n", r3, r3};
	struct kf_test_chat_server srv;
	char *stext = scripted_server(replies, 4, &srv);
	char *path = db();
	struct outcome o = KFORGE("optimize", KB_RELU, "--policy", "llm",
				  "--model", "scripted", "--base-url", srv.url,
				  "--llm", "retries=0", "--budget", "2",
				  "--time-cap", "0.2", "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	cJSON *rep = last_json(o.out);
	CHECK(kf_json_num(rep, "evaluated", 0) == 2);
	const cJSON *bs = cJSON_GetObjectItem(rep, "by_status");
	CHECK_MSG(kf_json_num(bs, "ok", 0) == 1, "%s", o.out);
	CHECK(kf_json_num(bs, "wrong_answer", 0) == 1);
	cJSON_Delete(rep);
	free(o.out);
	char *log = kf_test_read_text(srv.log);
	CHECK_CONTAINS(log, "class `ModelNew`");
	CHECK_CONTAINS(log, "def get_inputs");
	CHECK_CONTAINS(log, "```python");
	CHECK(!strstr(log, "kf_entry(const DLTensor"));
	free(log);
	kf_test_chat_server_stop(&srv);
	free(path);
	free(stext);
	free(r3);
	free(r1);
	free(wrong);
	free(good);
}

static void test_search_llm_policy_with_scripted_server(void)
{
	/* Reply 1: a plain kernel. Reply 2: a tunable one (tuned over two
	 * evaluations). Reply 3: no code at all. */
	char *p = kf_path_join(ROWSUM "/candidates", "same.c");
	char *same = kf_test_read_text(p);
	free(p);
	char *tun = kf_test_read_text(TUNABLE);
	char *r1 = kf_xasprintf(
	    "Analysis: ...\n```c\n/* scripted reply one */\n%s```\n", same);
	char *r2 = kf_xasprintf("Try lanes.\n```c\n%s```\n", tun);
	const char *replies[] = {r1, r2, "I cannot help with that."};
	struct kf_test_chat_server srv;
	char *stext = scripted_server(replies, 3, &srv);
	char *path = db();
	struct outcome o = KFORGE(
	    "optimize", ROWSUM, "--policy", "llm", "--model", "scripted",
	    "--base-url", srv.url, "--llm", "retries=0", "--tune-each", "2",
	    "--budget", "3", "--time-cap", "0.2", "--db", path, "--json");
	CHECK_MSG(o.code == 0, "%s", o.out);
	cJSON *rep = last_json(o.out);
	CHECK(kf_json_num(rep, "evaluated", 0) == 3);
	CHECK(kf_json_num(cJSON_GetObjectItem(rep, "by_status"), "ok", 0) == 3);
	cJSON_Delete(rep);
	free(o.out);

	struct kf_err err = KF_ERR_INIT;
	struct kf_store *st = NULL;
	CHECK(kf_store_open(path, 0, &st, &err) == 0);
	cJSON *cands = NULL, *calls = NULL;
	CHECK(kf_store_candidate_list(st, 1, true, false, &cands, &err) == 0);
	CHECK(cJSON_GetArraySize(cands) == 3);
	const cJSON *c0 = cJSON_GetArrayItem(cands, 0);
	const cJSON *c1 = cJSON_GetArrayItem(cands, 1);
	CHECK_CONTAINS(kf_json_str(c0, "source"), "/* scripted reply one */");
	CHECK_STR(kf_json_str(c0, "origin"), "llm:scripted");
	CHECK_CONTAINS(kf_json_str(c0, "prompt"), "\"role\":\"user\"");
	/* The second reply declared KF_PARAM: its candidates are tuned
	 * choices, made from the first candidate (the one shown). */
	CHECK_CONTAINS(kf_json_str(c1, "source"), "#define LANES ");
	CHECK(kf_json_str(cJSON_GetObjectItem(c1, "params"), "ROWS"));
	CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(c1, "parents"), 0)
		  ->valuedouble == kf_json_num(c0, "id", 0));
	CHECK(kf_store_llm_call_list(st, 1, &calls, &err) == 0);
	CHECK(cJSON_GetArraySize(calls) == 2);
	const cJSON *k0 = cJSON_GetArrayItem(calls, 0);
	CHECK_STR(kf_json_str(k0, "model"), "scripted");
	CHECK(kf_json_num(k0, "prompt_tokens", 0) == 11);
	CHECK(kf_json_num(k0, "completion_tokens", 0) == 22);
	CHECK(kf_json_num(k0, "candidates", 0) == 1);
	CHECK_STR(kf_json_str(k0, "status"), "ok");
	cJSON_Delete(calls);
	cJSON_Delete(cands);
	kf_store_close(st);

	/* The second prompt showed the first candidate and its result. */
	char *log = kf_test_read_text(srv.log);
	char *second = strchr(log, '\n');
	CHECK(second != NULL);
	CHECK_CONTAINS(log, "fixtures/rowsum");
	CHECK(!strstr(log, "scripted reply one") ||
	      strstr(log, "scripted reply one") > second);
	CHECK_CONTAINS(second, "scripted reply one");
	free(log);
	kf_test_chat_server_stop(&srv);
	free(path);
	free(stext);
	free(r1);
	free(r2);
	free(tun);
	free(same);
}

KF_TESTS(search) = {
    KF_TEST(test_search_params_parse_and_apply),
    KF_TEST(test_search_tunable_candidate_passes_untuned),
    KF_TEST(test_search_tune_improves_over_reference),
    KF_TEST(test_search_replay_directory),
    KF_TEST(test_search_replay_jsonl_reports_bad_lines),
    KF_TEST(test_search_replay_kernelbench_directory),
    KF_TEST(test_search_suite_over_kernelbench_directory),
    KF_TEST(test_search_replay_cuda_l1_jsonl),
    KF_TEST(test_search_resume_after_sigkill_loses_nothing),
    KF_TEST(test_search_time_limit_stops_resumably),
    KF_TEST(test_search_cli_errors_name_the_flag),
    KF_TEST(test_search_llm_policy_with_scripted_server),
    KF_TEST(test_search_llm_policy_kernelbench),
    KF_TESTS_END,
};
