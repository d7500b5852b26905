/*
 * server_test.c: the reward service end to end: the real kforge-serve on a
 * port of its choosing on 127.0.0.1, talked to over plain sockets; host
 * tasks from tests/fixtures (scale: y = 2x). Also runs the Python glue of
 * integrations/ against a live server (skipped without python3).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kforge/base.h>
#include <kforge/eval.h>
#include <kforge/server.h>
#include <kforge/store.h>

#include "harness.h"
#include "serve_proc.h"

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return; /* the server may close early (413) */
		p += w;
		n -= (size_t)w;
	}
}

struct reply {
	int status;
	char *head; /* status line and headers */
	char *body;
	cJSON *json;
};

static void reply_free(struct reply *r)
{
	free(r->head);
	free(r->body);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof(*r));
}

/* Reads a whole answer (the server closes after it). */
static void read_reply(int fd, struct reply *r)
{
	struct kf_strbuf sb = KF_STRBUF_INIT;
	char buf[65536];
	ssize_t n;
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		kf_strbuf_add(&sb, buf, (size_t)n);
	close(fd);
	const char *all = kf_strbuf_str(&sb);
	memset(r, 0, sizeof(*r));
	CHECK_MSG(sscanf(all, "HTTP/1.%*d %d", &r->status) == 1,
		  "no HTTP status in \"%.200s\"", all);
	const char *sep = strstr(all, "\r\n\r\n");
	CHECK(sep);
	r->head = kf_xasprintf("%.*s", (int)(sep - all), all);
	r->body = kf_xstrdup(sep + 4);
	r->json = cJSON_Parse(r->body);
	kf_strbuf_release(&sb);
}

static void http(int port, const char *method, const char *path,
		 const char *body, struct reply *r)
{
	read_reply(kf_test_http_send(port, method, path, body), r);
}

/* POSTs a JSON value (taken). */
static void post(int port, const char *path, cJSON *v, struct reply *r)
{
	char *text = kf_json_print(v);
	cJSON_Delete(v);
	http(port, "POST", path, text, r);
	free(text);
}

static const char *err_code(const struct reply *r)
{
	return kf_json_str(cJSON_GetObjectItem(r->json, "error"), "code");
}

static const char *err_msg(const struct reply *r)
{
	return kf_json_str(cJSON_GetObjectItem(r->json, "error"), "message");
}

#define WRONG_SRC KF_TEST_WRONG_SCALE_SRC

/* Correct but slow: ~30 ms a call. */
#define SLOW_SRC(tag)                                                          \
	"#include <kforge/kernel.h>\n"                                         \
	"/* " tag " */\n"                                                      \
	"int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int "       \
	"n_out, void *stream)\n"                                               \
	"{ (void)n_in; (void)n_out; (void)stream;\n"                           \
	"  volatile long spin = 0; for (long k = 0; k < 30000000; k++) "       \
	"spin += k;\n"                                                         \
	"  const float *x = in[0].data; float *y = out[0].data;\n"             \
	"  for (int64_t i = 0; i < kf_numel(&in[0]); i++) y[i] = 2 * x[i];\n"  \
	"  return 0; }\n"

static cJSON *item(const char *id, const char *problem, const char *key,
		   const char *text)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "problem_id", problem);
	cJSON_AddStringToObject(o, key, text);
	return o;
}

static const cJSON *find_item(const cJSON *items, const char *id)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, items)
	{
		if (!strcmp(kf_json_str(it, "id"), id))
			return it;
	}
	return NULL;
}

/* Every item answer has the same keys. */
static void check_keys(const cJSON *it)
{
	const char *keys[] = {"id",	"problem_id", "reward",	 "status",
			      "reason", "compiled",   "correct", "speedup",
			      "times",	"feedback",   "metrics", NULL};
	for (int i = 0; keys[i]; i++)
		CHECK_MSG(cJSON_GetObjectItem(it, keys[i]), "no key %s",
			  keys[i]);
	const char *times[] = {"candidate_ms", "reference_ms", "compile_s",
			       "eval_s", NULL};
	for (int i = 0; times[i]; i++)
		CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "times"),
					  times[i]));
	const char *metrics[] = {"pass_fraction", "advantage",	"group_id",
				 "turn",	  "code_found", "run_id",
				 "candidate_id",  NULL};
	for (int i = 0; metrics[i]; i++)
		CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(it, "metrics"),
					  metrics[i]));
}

/* The value of the sample named `name` (with its labels, as printed) in a
 * Prometheus text exposition, after checking every line of it: comments
 * are HELP or TYPE, samples are "name[{labels}] value". NAN where absent. */
static double prom_value(const char *text, const char *name)
{
	double found = NAN;
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		CHECK_MSG(nl, "the exposition's last line has no newline: %s",
			  p);
		if (!nl)
			break;
		char line[512];
		snprintf(line, sizeof(line), "%.*s", (int)(nl - p), p);
		p = nl + 1;
		if (line[0] == '#') {
			CHECK_MSG(!strncmp(line, "# HELP kforge_", 14) ||
				      !strncmp(line, "# TYPE kforge_", 14),
				  "bad comment line '%s'", line);
			continue;
		}
		char *sp = strrchr(line, ' ');
		CHECK_MSG(sp && !strncmp(line, "kforge_", 7),
			  "bad sample line '%s'", line);
		if (!sp)
			continue;
		*sp = 0;
		char *end = NULL;
		double v = strtod(sp + 1, &end);
		CHECK_MSG(end && !*end, "bad value in '%s %s'", line, sp + 1);
		if (!strcmp(line, name))
			found = v;
	}
	return found;
}

static void test_server_score_end_to_end(void)
{
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, NULL);
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	char *completion = kf_xasprintf("Here is my kernel.\n\n```c\n%s```\n"
					"It doubles x.",
					good);
	cJSON *b = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(b, "items");
	cJSON_AddItemToArray(items,
			     item("ok", "scale", "completion", completion));
	cJSON_AddItemToArray(items, item("wrong", "scale", "code", WRONG_SRC));
	cJSON_AddItemToArray(
	    items, item("broken", "scale", "code",
			"#include <kforge/kernel.h>\nint kf_entry(oops\n"));
	cJSON_AddItemToArray(items,
			     item("prose", "scale", "completion",
				  "I would write a loop that doubles x."));
	/* The same code again: evaluated once. */
	cJSON_AddItemToArray(items, item("again", "scale", "code", good));
	struct reply r;
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *out = cJSON_GetObjectItem(r.json, "items");
	CHECK(cJSON_GetArraySize(out) == 5);
	const cJSON *it;
	cJSON_ArrayForEach(it, out) check_keys(it);

	it = find_item(out, "ok");
	CHECK_MSG(!strcmp(kf_json_str(it, "status"), "ok"), "%s: %s",
		  kf_json_str(it, "status"), kf_json_str(it, "reason"));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(it, "correct")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(it, "compiled")));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(it, "reward")));
	/* checks only: no speedup, which the designs take as 1 */
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(it, "speedup")));
	CHECK(kf_json_num(cJSON_GetObjectItem(it, "times"), "compile_s", -1) >=
	      0);
	CHECK_CONTAINS(kf_json_str(it, "feedback"), "Status: ok");
	double ok_reward = kf_json_num(it, "reward", NAN);

	it = find_item(out, "wrong");
	CHECK_STR(kf_json_str(it, "status"), "wrong_answer");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(it, "correct")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(it, "compiled")));
	CHECK(kf_json_num(it, "reward", NAN) < ok_reward);
	CHECK_CONTAINS(kf_json_str(it, "feedback"), "wrong_answer");

	it = find_item(out, "broken");
	CHECK_STR(kf_json_str(it, "status"), "compile_error");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(it, "compiled")));
	CHECK(kf_json_num(it, "reward", NAN) < ok_reward);

	it = find_item(out, "prose");
	CHECK_STR(kf_json_str(it, "status"), "compile_error");
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(it, "reward")));
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(it, "metrics"), "code_found")));
	CHECK_CONTAINS(kf_json_str(it, "feedback"), "No code");

	it = find_item(out, "again");
	CHECK_STR(kf_json_str(it, "status"), "ok");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(it, "metrics"), "deduplicated")));
	reply_free(&r);

	/* /metrics says the same in Prometheus' format: three evaluations
	 * (the prose has no code, "again" was scored by "ok"'s), one
	 * scoring request. */
	http(s.port, "GET", "/metrics", NULL, &r);
	CHECK(r.status == 200);
	CHECK_CONTAINS(r.head, "Content-Type: text/plain; version=0.0.4");
	const char *pm = r.body;
	CHECK(prom_value(pm, "kforge_evaluations_total{status=\"ok\"}") == 1);
	CHECK(prom_value(pm,
			 "kforge_evaluations_total{status=\"wrong_answer\"}") ==
	      1);
	CHECK(prom_value(
		  pm, "kforge_evaluations_total{status=\"compile_error\"}") ==
	      1);
	CHECK(prom_value(pm, "kforge_items_total") == 5);
	CHECK(prom_value(pm, "kforge_dedup_hits_total") == 1);
	CHECK(prom_value(pm, "kforge_queue_depth") == 0);
	CHECK(prom_value(pm, "kforge_busy_workers") == 0);
	CHECK(prom_value(pm, "kforge_evaluation_seconds_count") == 3);
	CHECK(prom_value(pm, "kforge_evaluation_seconds_bucket{le=\"+Inf\"}") ==
	      3);
	CHECK(prom_value(pm, "kforge_evaluation_seconds_sum") > 0);
	CHECK(prom_value(pm, "kforge_scoring_request_seconds_count") == 1);
	/* Buckets are cumulative. */
	const char *les[] = {"0.5", "1",  "2",	 "5",	"10",  "20",
			     "30",  "60", "120", "300", "600", "+Inf"};
	double last = 0;
	for (size_t i = 0; i < sizeof(les) / sizeof(les[0]); i++) {
		char name[96];
		snprintf(name, sizeof(name),
			 "kforge_evaluation_seconds_bucket{le=\"%s\"}", les[i]);
		double v = prom_value(pm, name);
		CHECK_MSG(v >= last, "%s: %g after %g", name, v, last);
		last = v;
	}
	reply_free(&r);

	/* A group scored with a group design: GRPO advantages too. */
	b = cJSON_CreateObject();
	cJSON *rw = cJSON_AddObjectToObject(b, "reward");
	cJSON_AddStringToObject(rw, "name", "leap_rank");
	items = cJSON_AddArrayToObject(b, "items");
	const char *ids[] = {"g0", "g1", "g2"};
	const char *srcs[] = {good, WRONG_SRC, "no code"};
	for (int i = 0; i < 3; i++) {
		cJSON *o = item(ids[i], "scale", i == 2 ? "completion" : "code",
				srcs[i]);
		cJSON_AddStringToObject(o, "group_id", "prompt-7");
		cJSON_AddNumberToObject(o, "group_size", 3);
		cJSON_AddNumberToObject(o, "turn", 0);
		cJSON_AddItemToArray(items, o);
	}
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	out = cJSON_GetObjectItem(r.json, "items");
	double g0 = kf_json_num(find_item(out, "g0"), "reward", NAN);
	double g1 = kf_json_num(find_item(out, "g1"), "reward", NAN);
	CHECK_MSG(fabs(g0 - 1.0) < 1e-9, "g0 %g", g0); /* wins both games */
	CHECK(g1 < g0);
	const cJSON *m = cJSON_GetObjectItem(find_item(out, "g0"), "metrics");
	CHECK(kf_json_num(m, "advantage", NAN) > 0);
	CHECK_STR(kf_json_str(m, "group_id"), "prompt-7");
	CHECK(kf_json_num(m, "turn", -1) == 0);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(r.json, "reward"), "name"),
		  "leap_rank");
	reply_free(&r);
	kf_test_serve_stop(&s);

	/* Every result is in the store. */
	struct kf_store *st = NULL;
	struct kf_err err = KF_ERR_INIT;
	CHECK(!kf_store_open(s.db, 0, &st, &err));
	cJSON *runs = NULL;
	CHECK(!kf_store_run_list(st, &runs, &err));
	int evaluated = 0;
	const cJSON *run;
	cJSON_ArrayForEach(run, runs)
	{
		CHECK_STR(kf_json_str(run, "policy"), "serve");
		CHECK_STR(kf_json_str(run, "state"), "done");
		evaluated += (int)kf_json_num(run, "evaluated", 0);
	}
	CHECK_MSG(cJSON_GetArraySize(runs) == 2, "%d runs",
		  cJSON_GetArraySize(runs));
	/* 5 items with one repeat, then 3: 4 + 3 evaluations stored */
	CHECK_MSG(evaluated == 7, "%d evaluated", evaluated);
	cJSON_Delete(runs);
	kf_store_close(st);
	free(good);
	free(completion);
}

static void test_server_episodes(void)
{
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, NULL);
	struct reply r;
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "problem_id", "scale");
	cJSON_AddNumberToObject(b, "max_turns", 2);
	post(s.port, "/v1/episodes", b, &r);
	CHECK_MSG(r.status == 201, "%d %s", r.status, r.body);
	char *id = kf_xstrdup(kf_json_str(r.json, "episode_id"));
	CHECK(strlen(kf_json_str(r.json, "observation")) > 20);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "done")));
	reply_free(&r);

	char path[256];
	snprintf(path, sizeof(path), "/v1/episodes/%s/step", id);
	char *wrong = kf_xasprintf("```c\n%s```\n", WRONG_SRC);
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "completion", wrong);
	post(s.port, path, b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	CHECK(kf_json_num(r.json, "turn", 0) == 1);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r.json, "done")));
	CHECK_CONTAINS(kf_json_str(r.json, "observation"), "wrong_answer");
	CHECK(kf_json_num(r.json, "reward", 0) < 0);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(r.json, "item"), "status"),
		  "wrong_answer");
	reply_free(&r);

	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "code", good);
	post(s.port, path, b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	CHECK(kf_json_num(r.json, "turn", 0) == 2);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "done")));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(r.json, "trajectory_reward")));
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "rewards")) == 2);
	reply_free(&r);

	/* No turn past the last. */
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "code", good);
	post(s.port, path, b, &r);
	CHECK_MSG(r.status == 409, "%d %s", r.status, r.body);
	CHECK_STR(err_code(&r), "episode_done");
	reply_free(&r);

	snprintf(path, sizeof(path), "/v1/episodes/%s", id);
	http(s.port, "GET", path, NULL, &r);
	CHECK(r.status == 200);
	reply_free(&r);
	http(s.port, "DELETE", path, NULL, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	reply_free(&r);
	http(s.port, "DELETE", path, NULL, &r);
	CHECK(r.status == 404);
	CHECK_STR(err_code(&r), "unknown_episode");
	reply_free(&r);

	/* An episode of an unknown problem. */
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "problem_id", "no/such");
	post(s.port, "/v1/episodes", b, &r);
	CHECK(r.status == 404);
	CHECK_CONTAINS(err_msg(&r), "no/such");
	reply_free(&r);
	kf_test_serve_stop(&s);
	free(id);
	free(wrong);
	free(good);
}

static void test_server_openrlhf(void)
{
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, NULL);
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	/* The prompt holds a code block of its own: not the answer. */
	const char *prompt = "Write y = 2x.\n```c\nint kf_entry(void);\n```\n";
	char *q0 = kf_xasprintf("%s```c\n%s```", prompt, good);
	char *q1 = kf_xasprintf("%sI cannot.", prompt);
	cJSON *b = cJSON_CreateObject();
	cJSON *q = cJSON_AddArrayToObject(b, "query");
	cJSON *p = cJSON_AddArrayToObject(b, "prompts");
	cJSON *l = cJSON_AddArrayToObject(b, "labels");
	cJSON_AddItemToArray(q, cJSON_CreateString(q0));
	cJSON_AddItemToArray(q, cJSON_CreateString(q1));
	for (int i = 0; i < 2; i++) {
		cJSON_AddItemToArray(p, cJSON_CreateString(prompt));
		cJSON_AddItemToArray(l, cJSON_CreateString("scale"));
	}
	struct reply r;
	post(s.port, "/v1/openrlhf", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *rewards = cJSON_GetObjectItem(r.json, "rewards");
	const cJSON *scores = cJSON_GetObjectItem(r.json, "scores");
	CHECK(cJSON_GetArraySize(rewards) == 2);
	CHECK(cJSON_GetArrayItem(scores, 0)->valuedouble == 1);
	CHECK(cJSON_GetArrayItem(scores, 1)->valuedouble == 0);
	CHECK(cJSON_GetArrayItem(rewards, 0)->valuedouble >
	      cJSON_GetArrayItem(rewards, 1)->valuedouble);
	const cJSON *logs = cJSON_GetObjectItem(r.json, "extra_logs");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(logs, "speedup")) == 2);
	reply_free(&r);
	kf_test_serve_stop(&s);
	free(good);
	free(q0);
	free(q1);
}

/* Correct and slow: a chain of 5e8 dependent float operations a call
 * (0.4-1 s: each waits for the last, on any processor; a volatile counter's
 * loop ran about 4x faster where the processor forwards stores to loads at
 * once), so that its evaluation of 10 calls takes several seconds. */
#define SLOWER_SRC(tag)                                                        \
	"#include <kforge/kernel.h>\n"                                         \
	"/* " tag " */\n"                                                      \
	"int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int "       \
	"n_out, void *stream)\n"                                               \
	"{ (void)n_in; (void)n_out; (void)stream;\n"                           \
	"  const float *x = in[0].data; float *y = out[0].data;\n"             \
	"  float acc = x[0];\n"                                                \
	"  for (long k = 0; k < 500000000; k++) acc = acc * 0.999999f + "      \
	"1e-7f;\n"                                                             \
	"  for (int64_t i = 0; i < kf_numel(&in[0]); i++) y[i] = 2 * x[i];\n"  \
	"  if (acc != acc) y[0] = 0;\n"                                        \
	"  return 0; }\n"

/* OpenRLHF's client gives up after 180 s, and the rollout is left without
 * a reward (the step fails, docs/rl.md "OpenRLHF"): /v1/openrlhf answers
 * by its own deadline (--openrlhf-deadline) with what is done, the rest
 * infra_error (reward 0, counted in extra_logs), never later. */
static void test_server_openrlhf_deadline(void)
{
	const char *extra[] = {"--workers", "1", "--openrlhf-deadline", "2",
			       NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	cJSON *b = cJSON_CreateObject();
	cJSON *q = cJSON_AddArrayToObject(b, "query");
	cJSON *l = cJSON_AddArrayToObject(b, "labels");
	const char *srcs[] = {SLOWER_SRC("a"), SLOWER_SRC("b"),
			      SLOWER_SRC("c"), SLOWER_SRC("d")};
	for (int i = 0; i < 4; i++) {
		char *text = kf_xasprintf("```c\n%s```", srcs[i]);
		cJSON_AddItemToArray(q, cJSON_CreateString(text));
		free(text);
		cJSON_AddItemToArray(l, cJSON_CreateString("scale"));
	}
	struct reply r;
	uint64_t t0 = kf_now_ns();
	post(s.port, "/v1/openrlhf", b, &r);
	double took = (double)(kf_now_ns() - t0) / 1e9;
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	/* The one worker runs them one after another, each for seconds: at
	 * 2 s the last is still queued. */
	const cJSON *logs = cJSON_GetObjectItem(r.json, "extra_logs");
	const cJSON *infra = cJSON_GetObjectItem(logs, "infra_error");
	CHECK_MSG(cJSON_GetArraySize(infra) == 4 &&
		      cJSON_GetArrayItem(infra, 3)->valuedouble == 1,
		  "%s", r.body);
	CHECK(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "rewards"), 3)
		  ->valuedouble == 0);
	/* Not before its deadline; not after the queued evaluation either
	 * (it would have had a reward, not infra_error): what is asserted
	 * does not depend on how busy the machine is. */
	CHECK_MSG(took >= 1.9, "answered after %.2f s", took);
	reply_free(&r);
	http(s.port, "GET", "/v1/stats", NULL, &r);
	CHECK_MSG(kf_json_num(r.json, "deadline_misses", 0) >= 1, "%s", r.body);
	reply_free(&r);
	kf_test_serve_stop(&s);
}

struct group_post {
	int port;
	const char *path;
	cJSON *body; /* taken */
	struct reply r;
};

static void *group_post_run(void *arg)
{
	struct group_post *g = arg;
	post(g->port, g->path, g->body, &g->r);
	return NULL;
}

static cJSON *group_item(const char *id, const char *key, const char *text,
			 const char *group, int size)
{
	cJSON *o = item(id, "scale", key, text);
	cJSON_AddStringToObject(o, "group_id", group);
	cJSON_AddNumberToObject(o, "group_size", size);
	return o;
}

/* A group whose items come in separate requests at once gets the rewards
 * and advantages the same group gets in one request; a group that never
 * completes is answered at --group-wait with what it has, its items
 * stored; OpenRLHF's one-sample calls form groups of --openrlhf-group-size
 * by prompt. */
static void test_server_groups_across_requests(void)
{
	const char *extra[] = {"--group-wait", "3", "--openrlhf-group-size",
			       "2", NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	const char *ids[4] = {"a", "b", "c", "d"};
	const char *keys[4] = {"code", "code", "code", "completion"};
	const char *texts[4] = {good, WRONG_SRC, SLOW_SRC("g"),
				"I do not know."};
	cJSON *b = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(b, "items");
	for (int i = 0; i < 4; i++)
		cJSON_AddItemToArray(
		    items, group_item(ids[i], keys[i], texts[i], "one", 4));
	struct reply whole;
	post(s.port, "/v1/score", b, &whole);
	CHECK_MSG(whole.status == 200, "%d %s", whole.status, whole.body);
	const cJSON *wi = cJSON_GetObjectItem(whole.json, "items");

	struct group_post gp[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		cJSON *one = cJSON_CreateObject();
		cJSON *arr = cJSON_AddArrayToObject(one, "items");
		cJSON_AddItemToArray(
		    arr, group_item(ids[i], keys[i], texts[i], "two", 4));
		gp[i] = (struct group_post){s.port, "/v1/score", one, {0}};
		CHECK(pthread_create(&th[i], NULL, group_post_run, &gp[i]) ==
		      0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++) {
		struct reply *r = &gp[i].r;
		CHECK_MSG(r->status == 200, "%d %s", r->status, r->body);
		const cJSON *got =
		    cJSON_GetArrayItem(cJSON_GetObjectItem(r->json, "items"), 0);
		const cJSON *want = find_item(wi, ids[i]);
		CHECK(got && want);
		const cJSON *gm = cJSON_GetObjectItem(got, "metrics");
		const cJSON *wm = cJSON_GetObjectItem(want, "metrics");
		CHECK_STR(kf_json_str(got, "status"),
			  kf_json_str(want, "status"));
		double gr = kf_json_num(got, "reward", NAN),
		       wr = kf_json_num(want, "reward", NAN);
		CHECK_MSG(fabs(gr - wr) < 1e-12, "%s: reward %g, in one request "
						 "%g",
			  ids[i], gr, wr);
		double ga = kf_json_num(gm, "advantage", NAN),
		       wa = kf_json_num(wm, "advantage", NAN);
		CHECK_MSG(!isnan(wa) && fabs(ga - wa) < 1e-12,
			  "%s: advantage %g, in one request %g", ids[i], ga, wa);
		CHECK(kf_json_num(gm, "group_members", 0) == 4);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(gm, "group_complete")));
		CHECK(kf_json_num(gm, "candidate_id", 0) > 0);
		reply_free(r);
	}
	/* The wrong one is below the correct ones in both. */
	CHECK(kf_json_num(cJSON_GetObjectItem(find_item(wi, "b"), "metrics"),
			  "advantage", 0) <
	      kf_json_num(cJSON_GetObjectItem(find_item(wi, "a"), "metrics"),
			  "advantage", 0));
	reply_free(&whole);

	/* One item of three, the others never sent: answered at the wait. */
	b = cJSON_CreateObject();
	items = cJSON_AddArrayToObject(b, "items");
	cJSON_AddItemToArray(items, group_item("lone", "code", good, "three",
					       3));
	struct reply r;
	uint64_t t0 = kf_now_ns();
	post(s.port, "/v1/score", b, &r);
	double took = (double)(kf_now_ns() - t0) / 1e9;
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *lone =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "items"), 0);
	const cJSON *lm = cJSON_GetObjectItem(lone, "metrics");
	CHECK_MSG(took >= 2.9, "answered after %.2f s", took);
	CHECK_STR(kf_json_str(lone, "status"), "ok");
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(lone, "reward")));
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(lm, "group_complete")));
	CHECK(kf_json_num(lm, "group_members", 0) == 1);
	CHECK(kf_json_num(lm, "candidate_id", 0) > 0);
	reply_free(&r);
	http(s.port, "GET", "/v1/stats", NULL, &r);
	CHECK_MSG(kf_json_num(r.json, "groups_incomplete", -1) == 1 &&
		      kf_json_num(r.json, "groups_open", -1) == 0,
		  "%s", r.body);
	reply_free(&r);

	/* One group id on two problems, in two requests (two clients'
	 * "shared"): two groups, neither's rewards computed over the other's
	 * items; in one request, refused (a blind round found them joined). */
	const char *probs[2] = {"scale", "constant"};
	for (int i = 0; i < 2; i++) {
		cJSON *one = cJSON_CreateObject();
		cJSON *it = item(ids[i], probs[i], "code",
				 i ? "int x;" : good);
		cJSON_AddStringToObject(it, "group_id", "shared");
		cJSON_AddNumberToObject(it, "group_size", 2);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(one, "items"), it);
		gp[i] = (struct group_post){s.port, "/v1/score", one, {0}};
		CHECK(pthread_create(&th[i], NULL, group_post_run, &gp[i]) ==
		      0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		CHECK_MSG(gp[i].r.status == 200, "%d %s", gp[i].r.status,
			  gp[i].r.body);
		const cJSON *m = cJSON_GetObjectItem(
		    cJSON_GetArrayItem(cJSON_GetObjectItem(gp[i].r.json,
							   "items"),
				       0),
		    "metrics");
		CHECK_MSG(kf_json_num(m, "group_members", 0) == 1, "%s",
			  gp[i].r.body);
		CHECK(cJSON_IsFalse(cJSON_GetObjectItem(m, "group_complete")));
		reply_free(&gp[i].r);
	}
	b = cJSON_CreateObject();
	items = cJSON_AddArrayToObject(b, "items");
	for (int i = 0; i < 2; i++) {
		cJSON *it = item(ids[i], probs[i], "code", "int x;");
		cJSON_AddStringToObject(it, "group_id", "mixed");
		cJSON_AddItemToArray(items, it);
	}
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 422, "%d %s", r.status, r.body);
	CHECK_CONTAINS(r.body, "group mixed: items[0] is on problem scale and "
			       "items[1] on constant");
	reply_free(&r);

	/* OpenRLHF, one rollout per call: two calls of one prompt make the
	 * group of 2, neither waits for the wait. */
	for (int i = 0; i < 2; i++) {
		cJSON *o = cJSON_CreateObject();
		char *q = kf_xasprintf("Write it.\n```c\n%s```",
				       i ? WRONG_SRC : good);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "query"),
				     cJSON_CreateString(q));
		cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "prompts"),
				     cJSON_CreateString("Write it.\n"));
		cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "labels"),
				     cJSON_CreateString("scale"));
		free(q);
		gp[i] = (struct group_post){s.port, "/v1/openrlhf", o, {0}};
		CHECK(pthread_create(&th[i], NULL, group_post_run, &gp[i]) ==
		      0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		CHECK_MSG(gp[i].r.status == 200, "%d %s", gp[i].r.status,
			  gp[i].r.body);
		const cJSON *rw = cJSON_GetObjectItem(gp[i].r.json, "rewards");
		CHECK(cJSON_GetArraySize(rw) == 1 &&
		      cJSON_IsNumber(cJSON_GetArrayItem(rw, 0)));
		reply_free(&gp[i].r);
	}
	/* The lone one's and the two of "shared". */
	http(s.port, "GET", "/v1/stats", NULL, &r);
	CHECK_MSG(kf_json_num(r.json, "groups_incomplete", -1) == 3 &&
		      kf_json_num(r.json, "groups_open", -1) == 0,
		  "%s", r.body);
	reply_free(&r);
	http(s.port, "GET", "/metrics", NULL, &r);
	CHECK_CONTAINS(r.body, "kforge_groups_incomplete_total 3\n");
	reply_free(&r);
	free(good);
	kf_test_serve_stop(&s);
}

/* A reply with no code of its own is scored as such, even where the
 * reference the prompt shows reaches the extractor: with the prompt and the
 * reply both in a completion, or through OpenRLHF with a prompt that a
 * tokenizer's round trip moved by a space. */
static void test_server_echoed_reference_is_not_scored(void)
{
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, NULL);
	char *ref = kf_test_text("tests/fixtures/scale/reference.c");
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	char *prompt = kf_xasprintf("Make this faster.\n```c\n%s```\n", ref);
	char *echo = kf_xasprintf("%sI am not sure how to do this.", prompt);
	char *shifted = kf_xasprintf(" %s", echo);
	char *answer = kf_xasprintf("%s```c\n%s```", prompt, good);

	cJSON *b = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(b, "items");
	cJSON_AddItemToArray(items, item("echo", "scale", "completion", echo));
	cJSON_AddItemToArray(items, item("code", "scale", "code", ref));
	struct reply r;
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *out = cJSON_GetObjectItem(r.json, "items");
	const char *ids[] = {"echo", "code"};
	for (int i = 0; i < 2; i++) {
		const cJSON *it = find_item(out, ids[i]);
		CHECK_MSG(cJSON_IsFalse(cJSON_GetObjectItem(it, "correct")),
			  "%s: %s %s", ids[i], kf_json_str(it, "status"),
			  kf_json_str(it, "reason"));
		CHECK_STR(kf_json_str(it, "status"), "compile_error");
		CHECK_STR(kf_json_str(cJSON_GetObjectItem(it, "metrics"),
				      "check"),
			  "reference_copy");
		CHECK_CONTAINS(kf_json_str(it, "reason"), "reference");
		CHECK_CONTAINS(kf_json_str(it, "feedback"), "copied");
	}
	reply_free(&r);

	b = cJSON_CreateObject();
	cJSON *q = cJSON_AddArrayToObject(b, "query");
	cJSON *p = cJSON_AddArrayToObject(b, "prompts");
	cJSON *l = cJSON_AddArrayToObject(b, "labels");
	cJSON_AddItemToArray(q, cJSON_CreateString(shifted));
	cJSON_AddItemToArray(q, cJSON_CreateString(answer));
	for (int i = 0; i < 2; i++) {
		cJSON_AddItemToArray(p, cJSON_CreateString(prompt));
		cJSON_AddItemToArray(l, cJSON_CreateString("scale"));
	}
	post(s.port, "/v1/openrlhf", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *scores = cJSON_GetObjectItem(r.json, "scores");
	CHECK(cJSON_GetArrayItem(scores, 0)->valuedouble == 0);
	CHECK(cJSON_GetArrayItem(scores, 1)->valuedouble == 1);
	reply_free(&r);

	/* A prompt that shows a kernel of its own (not the reference), the
	 * reply that copies it, re-indented and with a comment, alone or
	 * after the prompt: not scored as the model's kernel; the same
	 * prompt with another kernel in the reply is. */
	char *shown = kf_xasprintf("Improve this kernel:\n```c\n%s```\n",
				   good);
	char *copy = kf_xasprintf("```c\n/* mine */\n  %s```", good);
	char *copy_after = kf_xasprintf("%s%s", shown, copy);
	char *other = kf_xasprintf("```c\n%s```", SLOW_SRC("other"));
	b = cJSON_CreateObject();
	q = cJSON_AddArrayToObject(b, "query");
	p = cJSON_AddArrayToObject(b, "prompts");
	l = cJSON_AddArrayToObject(b, "labels");
	const char *qs[] = {copy, copy_after, other};
	for (int i = 0; i < 3; i++) {
		cJSON_AddItemToArray(q, cJSON_CreateString(qs[i]));
		cJSON_AddItemToArray(p, cJSON_CreateString(shown));
		cJSON_AddItemToArray(l, cJSON_CreateString("scale"));
	}
	post(s.port, "/v1/openrlhf", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	scores = cJSON_GetObjectItem(r.json, "scores");
	const cJSON *compiled =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "extra_logs"),
				"compiled");
	CHECK_MSG(cJSON_GetArrayItem(scores, 0)->valuedouble == 0 &&
		      cJSON_GetArrayItem(scores, 1)->valuedouble == 0 &&
		      cJSON_GetArrayItem(compiled, 0)->valuedouble == 0 &&
		      cJSON_GetArrayItem(compiled, 1)->valuedouble == 0,
		  "%s", r.body);
	CHECK_MSG(cJSON_GetArrayItem(scores, 2)->valuedouble == 1, "%s",
		  r.body);
	reply_free(&r);
	/* The same through /v1/score, the prompt given with the item. */
	b = cJSON_CreateObject();
	items = cJSON_AddArrayToObject(b, "items");
	cJSON *pi = item("shown", "scale", "completion", copy);
	cJSON_AddStringToObject(pi, "prompt", shown);
	cJSON_AddItemToArray(items, pi);
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *si =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "items"), 0);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(si, "metrics"), "check"),
		  "reference_copy");
	reply_free(&r);
	http(s.port, "POST", "/v1/score",
	     "{\"items\": [{\"id\": 1, \"problem_id\": \"scale\", "
	     "\"completion\": \"x\", \"prompt\": 3}]}",
	     &r);
	CHECK(r.status == 400);
	CHECK_CONTAINS(err_msg(&r), "items[0] (id 1): prompt must be a string");
	reply_free(&r);
	free(shown);
	free(copy);
	free(copy_after);
	free(other);
	kf_test_serve_stop(&s);
	free(ref);
	free(good);
	free(prompt);
	free(echo);
	free(shifted);
	free(answer);
}

static void test_server_health_stats(void)
{
	struct kf_test_serve s;
	kf_test_serve_start(&s, true, NULL); /* through `kforge serve` */
	struct reply r;
	http(s.port, "GET", "/v1/health", NULL, &r);
	CHECK(r.status == 200);
	CHECK_STR(kf_json_str(r.json, "status"), "ok");
	CHECK_STR(kf_json_str(r.json, "backend"), "host");
	reply_free(&r);
	http(s.port, "GET", "/v1/stats", NULL, &r);
	CHECK(r.status == 200);
	const char *keys[] = {"queue_depth",	 "busy_workers",
			      "compile_backlog", "queue_capacity",
			      "workers",	 NULL};
	for (int i = 0; keys[i]; i++)
		CHECK_MSG(cJSON_IsNumber(cJSON_GetObjectItem(r.json, keys[i])),
			  "%s", keys[i]);
	/* A training step's rollouts fit by default (4096). */
	CHECK(kf_json_num(r.json, "queue_capacity", 0) == 4096);
	reply_free(&r);
	http(s.port, "GET", "/v1/rewards", NULL, &r);
	CHECK(r.status == 200);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "designs")) >= 4);
	reply_free(&r);
	http(s.port, "GET", "/v1/nothing", NULL, &r);
	CHECK(r.status == 404);
	reply_free(&r);
	http(s.port, "GET", "/v1/score", NULL, &r);
	CHECK(r.status == 405);
	reply_free(&r);
	kf_test_serve_stop(&s);
}

static void check_alive(int port)
{
	struct reply r;
	http(port, "GET", "/v1/health", NULL, &r);
	CHECK(r.status == 200);
	reply_free(&r);
}

/* An /v1/openrlhf answer of two rewards, the second the lower. */
static void check_second_reward_lower(const struct reply *r)
{
	CHECK_MSG(r->status == 200, "%d %s", r->status, r->body);
	const cJSON *rewards = cJSON_GetObjectItem(r->json, "rewards");
	CHECK(cJSON_GetArraySize(rewards) == 2);
	CHECK(cJSON_GetArrayItem(rewards, 0)->valuedouble >
	      cJSON_GetArrayItem(rewards, 1)->valuedouble);
}

/* A batch's answer in which items "ok" and "prose" were scored as usual
 * and the two named items failed on their own (compile_error, a reason
 * holding why, the reward of a reply with no code). */
static void check_items_failed_alone(const struct reply *r,
				     const char *const names[2],
				     const char *why)
{
	CHECK_MSG(r->status == 200, "%d %s", r->status, r->body);
	const cJSON *out = cJSON_GetObjectItem(r->json, "items");
	CHECK(cJSON_GetArraySize(out) == 4);
	CHECK_STR(kf_json_str(find_item(out, "ok"), "status"), "ok");
	double prose = kf_json_num(find_item(out, "prose"), "reward", NAN);
	for (int i = 0; i < 2; i++) {
		const cJSON *it = find_item(out, names[i]);
		CHECK_STR(kf_json_str(it, "status"), "compile_error");
		CHECK_CONTAINS(kf_json_str(it, "reason"), why);
		CHECK(kf_json_num(it, "reward", NAN) == prose);
	}
}

/* A NUL in an item's completion or code fails that item alone
 * (compile_error, nul_in_completion, a no-code reward) on /v1/score,
 * /v1/openrlhf and an episode's step; the others are scored (a blind
 * round found one such completion voided its whole batch). */
static void test_server_nul_in_a_completion_fails_its_item_only(void)
{
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, NULL);
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	char *completion = kf_xasprintf("```c\n%s```\n", good);
	cJSON *ok = cJSON_CreateString(completion);
	char *ok_json = cJSON_PrintUnformatted(ok);
	cJSON_Delete(ok);
	char *body = kf_xasprintf(
	    "{\"items\": [{\"id\": \"ok\", \"problem_id\": \"scale\", "
	    "\"completion\": %s}, {\"id\": \"nul\", \"problem_id\": "
	    "\"scale\", \"completion\": \"garbage\\u0000```c\\nint "
	    "kf_entry\"}, {\"id\": \"nulcode\", \"problem_id\": \"scale\", "
	    "\"code\": \"int x;\\u0000\"}, {\"id\": \"prose\", "
	    "\"problem_id\": \"scale\", \"completion\": \"no\"}]}",
	    ok_json);
	struct reply r;
	http(s.port, "POST", "/v1/score", body, &r);
	check_items_failed_alone(&r, (const char *const[]){"nul", "nulcode"},
				 "holds a NUL character");
	reply_free(&r);
	free(body);
	/* /v1/openrlhf: the second query holds one. */
	body = kf_xasprintf("{\"query\": [%s, \"a\\u0000b\"], \"labels\": "
			    "[\"scale\", \"scale\"]}",
			    ok_json);
	http(s.port, "POST", "/v1/openrlhf", body, &r);
	check_second_reward_lower(&r);
	reply_free(&r);
	free(body);
	/* 300 items whose completions hold \u0000: each fails alone, none
	 * evaluated (there is no cap on how many). */
	struct kf_strbuf b = KF_STRBUF_INIT;
	kf_strbuf_addstr(&b, "{\"items\": [");
	for (int i = 0; i < 300; i++)
		kf_strbuf_addf(&b,
			       "%s{\"id\": %d, \"problem_id\": \"scale\", "
			       "\"completion\": \"\\u0000\"}",
			       i ? ", " : "", i);
	kf_strbuf_addstr(&b, "]}");
	http(s.port, "POST", "/v1/score", kf_strbuf_str(&b), &r);
	CHECK_MSG(r.status == 200, "%d %.300s", r.status, r.body);
	const cJSON *its = cJSON_GetObjectItem(r.json, "items");
	CHECK(cJSON_GetArraySize(its) == 300);
	const cJSON *one;
	cJSON_ArrayForEach(one, its)
	CHECK_STR(kf_json_str(one, "status"), "compile_error");
	reply_free(&r);
	kf_strbuf_release(&b);
	/* A lone surrogate escape is read as U+FFFD: that completion has no
	 * code; the request is not malformed, the good item is scored. */
	body = kf_xasprintf("{\"items\": [{\"id\": \"ok\", \"problem_id\": "
			    "\"scale\", \"completion\": %s}, {\"id\": \"lone\", "
			    "\"problem_id\": \"scale\", \"completion\": "
			    "\"hi \\ud800 there\"}]}",
			    ok_json);
	http(s.port, "POST", "/v1/score", body, &r);
	CHECK_MSG(r.status == 200, "%d %.300s", r.status, r.body);
	CHECK_STR(kf_json_str(find_item(cJSON_GetObjectItem(r.json, "items"), "ok"), "status"), "ok");
	CHECK_STR(kf_json_str(find_item(cJSON_GetObjectItem(r.json, "items"), "lone"), "status"),
		  "compile_error");
	reply_free(&r);
	free(body);
	/* An episode's step: the turn is counted, a failure. */
	http(s.port, "POST", "/v1/episodes",
	     "{\"problem_id\": \"scale\", \"max_turns\": 2}", &r);
	CHECK_MSG(r.status == 201, "%d %s", r.status, r.body);
	char *ep = kf_xstrdup(kf_json_str(r.json, "episode_id"));
	reply_free(&r);
	char *step = kf_xasprintf("/v1/episodes/%s/step", ep);
	http(s.port, "POST", step, "{\"completion\": \"x\\u0000y\"}", &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(r.json, "item"), "status"),
		  "compile_error");
	CHECK(kf_json_num(r.json, "turn", 0) == 1);
	reply_free(&r);
	free(step);
	free(ep);
	free(ok_json);
	free(completion);
	free(good);
	kf_test_serve_stop(&s);
}

/* A completion over --max-code is that item's failure (compile_error,
 * code_too_large, the reward of a reply with no code), not an error of the
 * whole request: the other items are scored (a blind round found one such
 * completion voided a batch on /v1/score and /v1/openrlhf). */
static void test_server_oversized_completion_fails_its_item_only(void)
{
	const char *extra[] = {"--max-code", "4096", NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	char *completion = kf_xasprintf("```c\n%s```\n", good);
	char *big = kf_xcalloc(1, 5001);
	memset(big, 'x', 5000);
	cJSON *b = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(b, "items");
	cJSON_AddItemToArray(items, item("ok", "scale", "completion", completion));
	cJSON_AddItemToArray(items, item("big", "scale", "completion", big));
	cJSON_AddItemToArray(items, item("bigcode", "scale", "code", big));
	cJSON_AddItemToArray(items, item("prose", "scale", "completion", "no"));
	struct reply r;
	post(s.port, "/v1/score", b, &r);
	check_items_failed_alone(&r, (const char *const[]){"big", "bigcode"},
				 "of 5000 bytes is over the cap of 4096 bytes");
	reply_free(&r);
	/* The same on /v1/openrlhf: two rewards, the big one the lower. */
	b = cJSON_CreateObject();
	cJSON *q = cJSON_AddArrayToObject(b, "query");
	cJSON *l = cJSON_AddArrayToObject(b, "labels");
	cJSON_AddItemToArray(q, cJSON_CreateString(completion));
	cJSON_AddItemToArray(q, cJSON_CreateString(big));
	for (int i = 0; i < 2; i++)
		cJSON_AddItemToArray(l, cJSON_CreateString("scale"));
	post(s.port, "/v1/openrlhf", b, &r);
	check_second_reward_lower(&r);
	reply_free(&r);
	free(big);
	free(completion);
	free(good);
	kf_test_serve_stop(&s);
}

static void test_server_bad_requests(void)
{
	const char *extra[] = {"--max-body", "65536", NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	struct reply r;

	http(s.port, "POST", "/v1/score", "{\"items\": [", &r);
	CHECK_MSG(r.status == 400, "%d", r.status);
	CHECK_STR(err_code(&r), "malformed_json");
	reply_free(&r);
	check_alive(s.port);

	http(s.port, "POST", "/v1/score", "[1, 2]", &r);
	CHECK(r.status == 400);
	reply_free(&r);

	cJSON *b = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(b, "items"),
			     item("x", "nope/missing", "code", WRONG_SRC));
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 404, "%d", r.status);
	CHECK_STR(err_code(&r), "unknown_problem");
	CHECK_CONTAINS(err_msg(&r), "nope/missing");
	reply_free(&r);

	/* Missing fields. */
	http(s.port, "POST", "/v1/score", "{}", &r);
	CHECK(r.status == 400);
	CHECK_STR(err_code(&r), "missing_field");
	CHECK_CONTAINS(err_msg(&r), "items");
	reply_free(&r);
	http(s.port, "POST", "/v1/score",
	     "{\"items\": [{\"id\": 1, \"problem_id\": \"scale\"}]}", &r);
	CHECK(r.status == 400);
	CHECK_CONTAINS(err_msg(&r), "completion");
	reply_free(&r);
	http(s.port, "POST", "/v1/score",
	     "{\"items\": [{\"problem_id\": \"scale\", \"code\": \"x\"}]}", &r);
	CHECK(r.status == 400);
	CHECK_CONTAINS(err_msg(&r), "id");
	reply_free(&r);
	http(s.port, "POST", "/v1/score", NULL, &r);
	CHECK(r.status == 400);
	reply_free(&r);
	/* A group that is not whole, a bad design. */
	http(s.port, "POST", "/v1/score",
	     "{\"items\": [{\"id\": 1, \"problem_id\": \"scale\", \"code\": "
	     "\"x\", \"group_id\": \"g\", \"group_size\": 1}, {\"id\": 2, "
	     "\"problem_id\": \"scale\", \"code\": \"x\", \"group_id\": "
	     "\"g\"}]}",
	     &r);
	CHECK(r.status == 422);
	CHECK_STR(err_code(&r), "bad_group");
	CHECK_CONTAINS(err_msg(&r), "group_size is 1 but the request holds 2");
	reply_free(&r);
	http(s.port, "POST", "/v1/score",
	     "{\"reward\": \"nonesuch\", \"items\": []}", &r);
	CHECK(r.status == 422);
	reply_free(&r);

	/* A huge body: 413 whether or not it is sent. */
	size_t big = 200000;
	char *huge = kf_xmalloc(big + 1);
	memset(huge, ' ', big);
	huge[0] = '{';
	huge[big - 1] = '}';
	huge[big] = 0;
	http(s.port, "POST", "/v1/score", huge, &r);
	CHECK_MSG(r.status == 413, "%d", r.status);
	CHECK_STR(err_code(&r), "body_too_large");
	reply_free(&r);
	free(huge);
	int fd = kf_test_dial(s.port);
	const char *h = "POST /v1/score HTTP/1.1\r\nHost: x\r\n"
			"Content-Length: 999999999\r\n\r\n{";
	send_all(fd, h, strlen(h));
	read_reply(fd, &r);
	CHECK(r.status == 413);
	reply_free(&r);
	/* Chunked, with no length to check up front: cut at the cap. */
	fd = kf_test_dial(s.port);
	h = "POST /v1/score HTTP/1.1\r\nHost: x\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n";
	send_all(fd, h, strlen(h));
	char *chunk = kf_xmalloc(70001);
	memset(chunk, ' ', 70000);
	chunk[70000] = 0;
	send_all(fd, "11170\r\n", 7);
	send_all(fd, chunk, 70000);
	send_all(fd, "\r\n0\r\n\r\n", 7);
	free(chunk);
	read_reply(fd, &r);
	CHECK_MSG(r.status == 413, "%d", r.status);
	CHECK_STR(err_code(&r), "body_too_large");
	reply_free(&r);
	check_alive(s.port);
	kf_test_serve_stop(&s);
}

static void test_server_slow_client(void)
{
	const char *extra[] = {"--client-timeout", "1", NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	/* Headers, then a body that never comes: 408, connection closed. */
	int fd = kf_test_dial(s.port);
	struct timeval tv = {10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	const char *h = "POST /v1/score HTTP/1.1\r\nHost: x\r\n"
			"Content-Length: 100\r\n\r\n{\"items\"";
	send_all(fd, h, strlen(h));
	uint64_t t0 = kf_now_ns();
	check_alive(s.port); /* others are served meanwhile */
	struct reply r;
	read_reply(fd, &r);
	double took = (double)(kf_now_ns() - t0) / 1e9;
	CHECK_MSG(r.status == 408, "%d", r.status);
	CHECK_STR(err_code(&r), "request_timeout");
	/* Before the socket's own 10 s timeout (read_reply would fail), and
	 * not at once (the server waits its 1 s). */
	CHECK_MSG(took >= 0.5, "answered after %.1f s", took);
	reply_free(&r);

	/* A body that trickles in for longer than the timeout: 408. */
	fd = kf_test_dial(s.port);
	h = "POST /v1/score HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	    "Content-Length: 40\r\n\r\n";
	send_all(fd, h, strlen(h));
	for (int i = 0; i < 8; i++) {
		send_all(fd, " ", 1);
		kf_test_sleep_ms(400);
	}
	read_reply(fd, &r);
	CHECK_MSG(r.status == 408, "%d", r.status);
	CHECK_STR(err_code(&r), "request_timeout");
	reply_free(&r);
	check_alive(s.port);
	kf_test_serve_stop(&s);
}

static void test_server_queue_full(void)
{
	const char *extra[] = {"--workers",  "1", "--queue", "2",
			       "--time-cap", "1", NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	/* Two slow items hold the one worker; a second request finds one
	 * still waiting and cannot add two more. */
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		cJSON *b = cJSON_CreateObject();
		cJSON *items = cJSON_AddArrayToObject(b, "items");
		cJSON_AddItemToArray(
		    items, item("s1", "scale", "code", SLOW_SRC("1")));
		cJSON_AddItemToArray(
		    items, item("s2", "scale", "code", SLOW_SRC("2")));
		struct reply r;
		post(s.port, "/v1/score", b, &r);
		_exit(r.status == 200 ? 0 : 1);
	}
	struct reply r;
	bool busy = false;
	for (int i = 0; i < 100 && !busy; i++) {
		kf_test_sleep_ms(50);
		http(s.port, "GET", "/v1/stats", NULL, &r);
		busy = kf_json_num(r.json, "busy_workers", 0) == 1 &&
		       kf_json_num(r.json, "queue_depth", 0) == 1;
		reply_free(&r);
	}
	CHECK(busy);
	cJSON *b = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(b, "items");
	cJSON_AddItemToArray(items, item("t1", "scale", "code", WRONG_SRC));
	cJSON_AddItemToArray(items, item("t2", "scale", "code", "x kf_entry"));
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 503, "%d %s", r.status, r.body);
	CHECK_STR(err_code(&r), "queue_full");
	CHECK_CONTAINS(r.head, "Retry-After: ");
	reply_free(&r);
	http(s.port, "GET", "/v1/stats", NULL, &r);
	CHECK(kf_json_num(r.json, "rejected_busy", 0) == 1);
	CHECK(kf_json_num(r.json, "compile_backlog", -1) >= 0);
	reply_free(&r);
	int st = 0;
	waitpid(kid, &st, 0);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the first request failed");
	kf_test_serve_stop(&s);
}

static void test_server_deadline(void)
{
	struct kf_test_serve s;
	const char *extra[] = {"--workers", "1", "--time-cap", "2", NULL};
	kf_test_serve_start(&s, false, extra);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddNumberToObject(b, "deadline_s", 0.5);
	cJSON *items = cJSON_AddArrayToObject(b, "items");
	cJSON_AddItemToArray(items, item("a", "scale", "code", SLOW_SRC("a")));
	cJSON_AddItemToArray(items, item("b", "scale", "code", SLOW_SRC("b")));
	struct reply r;
	uint64_t t0 = kf_now_ns();
	post(s.port, "/v1/score", b, &r);
	double took = (double)(kf_now_ns() - t0) / 1e9;
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	/* The items' infra_error "deadline" below says the deadline, not the
	 * evaluations' end, answered; the time only bounds it from below. */
	CHECK_MSG(took >= 0.45, "took %.1f s", took);
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(r.json, "items"))
	{
		CHECK_STR(kf_json_str(it, "status"), "infra_error");
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(it, "reward")));
		CHECK_CONTAINS(kf_json_str(it, "reason"), "deadline");
	}
	reply_free(&r);
	check_alive(s.port);
	kf_test_serve_stop(&s);
}

/* SIGTERM with a request in flight: it is answered (infra_error, reward
 * null), then the server exits 0. */
static void test_server_shutdown_answers_in_flight(void)
{
	const char *extra[] = {"--time-cap", "3", NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		cJSON *b = cJSON_CreateObject();
		cJSON_AddItemToArray(cJSON_AddArrayToObject(b, "items"),
				     item("a", "scale", "code", SLOW_SRC("x")));
		struct reply r;
		post(s.port, "/v1/score", b, &r);
		const cJSON *it =
		    cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "items"), 0);
		const char *reason = kf_json_str(it, "reason");
		bool ok = r.status == 200 &&
			  !strcmp(kf_json_str(it, "status"), "infra_error") &&
			  cJSON_IsNull(cJSON_GetObjectItem(it, "reward")) &&
			  reason && strstr(reason, "stopping");
		if (!ok)
			printf("    got %d %s\n", r.status, r.body);
		_exit(ok ? 0 : 1);
	}
	struct reply r;
	bool busy = false;
	for (int i = 0; i < 100 && !busy; i++) {
		kf_test_sleep_ms(50);
		http(s.port, "GET", "/v1/stats", NULL, &r);
		busy = kf_json_num(r.json, "busy_workers", 0) == 1;
		reply_free(&r);
	}
	CHECK(busy);
	kf_test_serve_stop(&s);
	int st = 0;
	waitpid(kid, &st, 0);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the request in flight was not answered");
}

/* A candidate whose call never returns. */
#define SPIN_SRC(tag)                                                          \
	"#include <kforge/kernel.h>\n"                                         \
	"/* " tag " */\n"                                                      \
	"int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int "       \
	"n_out, void *stream)\n"                                               \
	"{ (void)in; (void)n_in; (void)out; (void)n_out; (void)stream;\n"      \
	"  for (volatile long k = 0;; k++) ;\n"                                \
	"  return 0; }\n"

struct proc_seen {
	pid_t pid;
	unsigned long long start; /* /proc/PID/stat field 22 */
};

/* Field 4 (ppid), 14 + 15 (CPU ticks), 22 (start time) and the state of a
 * process; false when it is gone. */
static bool proc_stat(pid_t pid, pid_t *ppid, unsigned long long *ticks,
		      unsigned long long *start, char *state)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	int pp = 0;
	unsigned long long ut = 0, st = 0, sta = 0;
	char s = 0;
	if (!p || sscanf(p + 1,
			 " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
			 "%*d %*d %*d %*d %*d %*d %llu",
			 &s, &pp, &ut, &st, &sta) != 5)
		return false;
	*ppid = pp;
	*ticks = ut + st;
	*start = sta;
	*state = s;
	return true;
}

/* The descendants of root now; *max_ticks gets the most CPU any used. */
static int descendants(pid_t root, struct proc_seen *out, int cap,
		       unsigned long long *max_ticks)
{
	pid_t pids[4096], ppids[4096];
	unsigned long long ticks[4096], starts[4096];
	int n = 0;
	DIR *d = opendir("/proc");
	CHECK(d);
	struct dirent *e;
	while ((e = readdir(d)) && n < 4096) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		char st;
		if (*end || v <= 0)
			continue;
		if (proc_stat((pid_t)v, &ppids[n], &ticks[n], &starts[n], &st))
			pids[n++] = (pid_t)v;
	}
	closedir(d);
	int m = 0;
	*max_ticks = 0;
	bool grew = true;
	while (grew) {
		grew = false;
		for (int i = 0; i < n; i++) {
			bool in = false, parent = ppids[i] == root;
			for (int k = 0; k < m && !in; k++) {
				in |= out[k].pid == pids[i];
				parent |= out[k].pid == ppids[i];
			}
			if (in || !parent || m >= cap)
				continue;
			out[m].pid = pids[i];
			out[m].start = starts[i];
			m++;
			grew = true;
			if (ticks[i] > *max_ticks)
				*max_ticks = ticks[i];
		}
	}
	return m;
}

/* SIGTERM while a candidate spins in its call: kforge-serve exits 0 within
 * seconds, the request in flight is answered (infra_error), and no process
 * of the evaluation (eval child, worker, runners) is left running. */
static void test_server_sigterm_kills_spinning_evaluation(void)
{
	const char *extra[] = {"--workers", "1", "--call-timeout-ms", "120000",
			       NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		cJSON *b = cJSON_CreateObject();
		cJSON_AddItemToArray(
		    cJSON_AddArrayToObject(b, "items"),
		    item("spin", "scale", "code", SPIN_SRC("sigterm")));
		struct reply r;
		post(s.port, "/v1/score", b, &r);
		const cJSON *it =
		    cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "items"), 0);
		bool ok = r.status == 200 &&
			  !strcmp(kf_json_str(it, "status"), "infra_error") &&
			  strstr(kf_json_str(it, "reason"), "stopping");
		if (!ok)
			printf("    got %d %s\n", r.status, r.body);
		_exit(ok ? 0 : 1);
	}
	/* Until the candidate has spun for a second of CPU time. */
	struct proc_seen seen[64];
	int n = 0;
	unsigned long long hz = (unsigned long long)sysconf(_SC_CLK_TCK);
	unsigned long long most = 0;
	for (int i = 0; i < 1200 && most < hz; i++) {
		kf_test_sleep_ms(50);
		n = descendants(s.pid, seen, 64, &most);
	}
	CHECK_MSG(most >= hz, "the candidate did not start spinning");
	CHECK_MSG(n >= 4, "%d processes under kforge-serve", n);
	uint64_t t0 = kf_now_ns();
	kill(s.pid, SIGTERM);
	int st = 0;
	bool exited = false;
	/* The call may run 120 s: an exit within 40 s of SIGTERM is one that
	 * stopped it, however busy the machine is. */
	while (!exited && kf_now_ns() - t0 < 40000000000ull) {
		exited = waitpid(s.pid, &st, WNOHANG) == s.pid;
		if (!exited)
			kf_test_sleep_ms(50);
	}
	double took = (double)(kf_now_ns() - t0) / 1e9;
	if (!exited) {
		kill(s.pid, SIGKILL);
		waitpid(s.pid, &st, 0);
	}
	/* Whatever is left must go before the next case, pass or fail. */
	int left = 0;
	for (int tries = 0; tries < 40; tries++) {
		left = 0;
		for (int i = 0; i < n; i++) {
			pid_t pp;
			unsigned long long t, start;
			char state;
			if (proc_stat(seen[i].pid, &pp, &t, &start, &state) &&
			    start == seen[i].start && state != 'Z')
				left++;
		}
		if (!left)
			break;
		kf_test_sleep_ms(50);
	}
	if (left)
		for (int i = 0; i < n; i++) {
			pid_t pp;
			unsigned long long t, start;
			char state;
			if (proc_stat(seen[i].pid, &pp, &t, &start, &state) &&
			    start == seen[i].start)
				kill(seen[i].pid, SIGKILL);
		}
	CHECK_MSG(exited, "kforge-serve did not exit within %.0f s of SIGTERM",
		  took);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "kforge-serve ended with status %d", st);
	CHECK_MSG(!left, "%d of the evaluation's %d processes still run", left,
		  n);
	int kst = 0;
	waitpid(kid, &kst, 0);
	CHECK_MSG(WIFEXITED(kst) && WEXITSTATUS(kst) == 0,
		  "the request in flight was not answered");
}

static void test_server_integrations(void)
{
	/* The Python with torch where there is one (OpenRLHF's agent needs
	 * it), else any. */
	struct kf_err perr = KF_ERR_INIT;
	char *py = kf_eval_python(&perr);
	bool torch = py != NULL;
	if (!py)
		py = kf_which("python3");
	if (!py)
		SKIP("python3 is not installed");
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, NULL);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
	char *argv[] = {py, "integrations/tests/test_integrations.py", url,
			NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int st = 0;
	struct kf_err err = KF_ERR_INIT;
	CHECK(!kf_proc_run(argv, 300000, 1 << 20, &out, &st, &err));
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s",
		  kf_strbuf_str(&out));
	CHECK_CONTAINS(kf_strbuf_str(&out), "OK");
	if (torch)
		CHECK_CONTAINS(kf_strbuf_str(&out),
			       "check_openrlhf_agent passed");
	kf_strbuf_release(&out);
	free(py);
	kf_test_serve_stop(&s);
}

/* The library without HTTP: kf_server_handle checks requests itself. */
static void test_server_handle_without_http(void)
{
	struct kf_server *s = kf_test_server_lib("lib.db");
	struct {
		const char *method, *path, *body;
		int status;
		const char *code;
	} cases[] = {
	    {"POST", "/v1/score", "{\"items\": []} trailing", 400,
	     "malformed_json"},
	    {"POST", "/v1/score", "\"items\"", 400, "bad_request"},
	    /* A NUL anywhere but in an item's text would cut a string
	     * where it stands: the request is refused. */
	    {"POST", "/v1/score",
	     "{\"reward\": \"speedup\\u0000x\", \"items\": [{\"id\": 1, "
	     "\"problem_id\": \"scale\", \"code\": \"a\"}]}",
	     400, "nul_in_string"},
	    {"POST", "/v1/score",
	     "{\"items\": [{\"id\": 1, \"problem_id\": \"sc\\u0000ale\", "
	     "\"code\": \"a\"}]}",
	     400, "nul_in_string"},
	    /* An escaped backslash before u0000 is no NUL. */
	    {"POST", "/v1/score",
	     "{\"items\": [{\"id\": 1, \"problem_id\": \"scale\", "
	     "\"code\": \"\\\\u0000\"}, {\"id\": 1, \"problem_id\": "
	     "\"scale\", \"code\": \"b\"}]}",
	     422, "duplicate_id"},
	    {"POST", "/v1/score", "{\"items\": {}}", 400, "bad_field"},
	    {"POST", "/v1/score", "{\"items\": [1, 2, 3, 4, 5]}", 413,
	     "too_many_items"},
	    {"POST", "/v1/score",
	     "{\"items\": [{\"id\": 1, \"problem_id\": \"scale\", "
	     "\"code\": \"a\"}, {\"id\": 1, \"problem_id\": \"scale\", "
	     "\"code\": \"b\"}]}",
	     422, "duplicate_id"},
	    {"POST", "/v1/score",
	     "{\"items\": [{\"id\": 1, \"problem_id\": \"scale\", "
	     "\"code\": \"a\", \"completion\": \"b\"}]}",
	     422, "conflicting_fields"},
	    {"POST", "/v1/score", "{\"deadline_s\": -1, \"items\": []}", 422,
	     "bad_deadline"},
	    {"POST", "/v1/openrlhf", "{\"query\": [\"a\"], \"labels\": []}",
	     422, "length_mismatch"},
	    {"POST", "/v1/episodes",
	     "{\"problem_id\": \"scale\", "
	     "\"reward\": \"cuda_l1\"}",
	     422, "bad_reward"},
	    {"POST", "/v1/episodes/ep-9/step", "{\"code\": \"x\"}", 404,
	     "unknown_episode"},
	    {"DELETE", "/v1/health", NULL, 405, "method_not_allowed"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kf_server_response r;
		const char *b = cases[i].body;
		kf_server_handle(s, cases[i].method, cases[i].path, b,
				 b ? strlen(b) : 0, &r);
		cJSON *j = cJSON_Parse(r.body);
		CHECK_MSG(r.status == cases[i].status, "case %zu: %d %s", i,
			  r.status, r.body);
		CHECK_STR(kf_json_str(cJSON_GetObjectItem(j, "error"), "code"),
			  cases[i].code);
		cJSON_Delete(j);
		kf_server_response_release(&r);
	}
	/* An empty batch is answered at once. */
	struct kf_server_response r;
	kf_server_handle(s, "POST", "/v1/score", "{\"items\": []}", 13, &r);
	CHECK_MSG(r.status == 200, "%s", r.body);
	kf_server_response_release(&r);
	/* A raw NUL byte (JSON escapes it) would cut a string short unseen:
	 * the request is refused, naming the byte. */
	static const char raw[] = "{\"items\": [{\"id\": 1, \"problem_id\": "
				  "\"scale\", \"code\": \"a\0b\"}]}";
	kf_server_handle(s, "POST", "/v1/score", raw, sizeof(raw) - 1, &r);
	CHECK_MSG(r.status == 400, "%d %s", r.status, r.body);
	CHECK_CONTAINS(r.body, "malformed_json");
	CHECK_CONTAINS(r.body, "raw NUL byte at byte 54");
	kf_server_response_release(&r);
	cJSON *st = kf_server_stats(s);
	/* One per case above, and the raw NUL. */
	CHECK(kf_json_num(st, "errors_4xx", 0) == 15);
	cJSON_Delete(st);
	kf_server_free(s);
}

/* KernelBench-format problems: the id resolves to <tasks>/<id>.py, a
 * completion's last fenced python block defining ModelNew is evaluated
 * (as a .py candidate), and one that brings only C is told what was
 * missing. */
static void test_server_score_kernelbench(void)
{
	kf_test_need_torch();
	struct kf_test_serve s;
	const char *extra[] = {"--tasks", "tests/data/kernelbench", NULL};
	kf_test_serve_start(&s, false, extra);
	char *good = kf_test_text("tests/data/kernelbench/candidates/1_ReLU/"
			     "correct.py");
	char *wrong =
	    kf_test_text("tests/data/kernelbench/candidates/1_ReLU/wrong.py");
	char *syntax =
	    kf_test_text("tests/data/kernelbench/candidates/1_ReLU/syntax.py");
	char *dies = kf_test_text(
	    "tests/data/kernelbench/candidates/1_ReLU/dies_at_import.py");
	char *completion = kf_xasprintf(
	    "<think>```python\nclass ModelNew: pass\n```</think>"
	    "A first try:\n```python\nimport torch\n```\nThe answer:\n"
	    "```python\n%s```\n",
	    good);
	cJSON *b = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(b, "items");
	cJSON_AddItemToArray(
	    items, item("ok", "level1/1_ReLU", "completion", completion));
	cJSON_AddItemToArray(items,
			     item("wrong", "level1/1_ReLU", "code", wrong));
	cJSON_AddItemToArray(items,
			     item("syntax", "level1/1_ReLU", "code", syntax));
	cJSON_AddItemToArray(items,
			     item("dies", "level1/1_ReLU", "code", dies));
	cJSON_AddItemToArray(
	    items, item("c_only", "level1/1_ReLU", "completion",
			"```c\nint kf_entry(void) { return 0; }\n```\n"));
	struct reply r;
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *out = cJSON_GetObjectItem(r.json, "items");
	CHECK(cJSON_GetArraySize(out) == 5);
	const cJSON *it;
	cJSON_ArrayForEach(it, out) check_keys(it);
	/* Ended while loading: the candidate's failure, not the engine's (its
	 * result lacked the compile block, which serve took for an engine's
	 * error: infra_error, a reward dropped). */
	it = find_item(out, "dies");
	CHECK_MSG(!strcmp(kf_json_str(it, "status"), "runtime_error"),
		  "%s: %s", kf_json_str(it, "status"),
		  kf_json_str(it, "reason"));
	CHECK(kf_json_num(it, "reward", 0) < 0);
	it = find_item(out, "ok");
	CHECK_MSG(!strcmp(kf_json_str(it, "status"), "ok"), "%s: %s",
		  kf_json_str(it, "status"), kf_json_str(it, "reason"));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(it, "correct")));
	it = find_item(out, "wrong");
	CHECK_STR(kf_json_str(it, "status"), "wrong_answer");
	it = find_item(out, "syntax");
	CHECK_STR(kf_json_str(it, "status"), "load_error");
	CHECK_CONTAINS(kf_json_str(it, "reason"), "SyntaxError");
	it = find_item(out, "c_only");
	CHECK_STR(kf_json_str(it, "status"), "compile_error");
	CHECK_CONTAINS(kf_json_str(it, "reason"),
		       "no fenced python block defining class ModelNew");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(it, "metrics"), "code_found")));
	reply_free(&r);
	free(completion);
	free(dies);
	free(syntax);
	free(wrong);
	free(good);
	kf_test_serve_stop(&s);
}

/* An episode on a KernelBench-format problem: the first observation is
 * the kernelbench prompt (the task's program, ModelNew asked for), the
 * next observation is the evaluation's feedback. */
static void test_server_episode_kernelbench(void)
{
	kf_test_need_torch();
	struct kf_test_serve s;
	const char *extra[] = {"--tasks", "tests/data/kernelbench", NULL};
	kf_test_serve_start(&s, false, extra);
	struct reply r;
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "problem_id", "level1/1_ReLU");
	cJSON_AddNumberToObject(b, "max_turns", 2);
	post(s.port, "/v1/episodes", b, &r);
	CHECK_MSG(r.status == 201, "%d %s", r.status, r.body);
	char *id = kf_xstrdup(kf_json_str(r.json, "episode_id"));
	CHECK_CONTAINS(kf_json_str(r.json, "observation"), "class `ModelNew`");
	CHECK_CONTAINS(kf_json_str(r.json, "observation"), "def get_inputs");
	reply_free(&r);
	char path[256];
	snprintf(path, sizeof(path), "/v1/episodes/%s/step", id);
	char *wrong =
	    kf_test_text("tests/data/kernelbench/candidates/1_ReLU/wrong.py");
	char *completion = kf_xasprintf("```python\n%s```\n", wrong);
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "completion", completion);
	post(s.port, path, b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *item = cJSON_GetObjectItem(r.json, "item");
	CHECK_MSG(!strcmp(kf_json_str(item, "status"), "wrong_answer"),
		  "%s: %s", kf_json_str(item, "status"),
		  kf_json_str(item, "reason"));
	CHECK_CONTAINS(kf_json_str(r.json, "observation"), "wrong_answer");
	reply_free(&r);
	char *good =
	    kf_test_text("tests/data/kernelbench/candidates/1_ReLU/correct.py");
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "code", good);
	post(s.port, path, b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(r.json, "item"), "status"),
		  "ok");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "done")));
	reply_free(&r);
	free(good);
	free(completion);
	free(wrong);
	free(id);
	kf_test_serve_stop(&s);
}

/* Writes text to path (the test fails when it cannot). */
static void put_file(const char *path, const char *text)
{
	struct kf_err err = KF_ERR_INIT;
	CHECK_MSG(!kf_file_write_atomic(path, text, strlen(text), &err), "%s",
		  err.msg);
}

/* Copies the scale fixture to dir (its task.json and reference). */
static void copy_scale(const char *dir)
{
	struct kf_err err = KF_ERR_INIT;
	CHECK(!kf_mkdir_p(dir, &err));
	const char *files[] = {"task.json", "reference.c", NULL};
	for (int i = 0; files[i]; i++) {
		char src[256], dst[600];
		snprintf(src, sizeof(src), "tests/fixtures/scale/%s", files[i]);
		snprintf(dst, sizeof(dst), "%s/%s", dir, files[i]);
		char *text = kf_test_text(src);
		put_file(dst, text);
		free(text);
	}
}

/* Problem ids stay inside the tasks directory: ids with '..', absolute
 * ids and ids through a symbolic link to elsewhere are refused (400
 * bad_field, naming the field) on every route that takes one, and nothing
 * outside is loaded or evaluated; a nested id inside still is. */
static void test_server_problem_ids_stay_inside(void)
{
	char root[512], outside[512], marker[600], p[700], q[700];
	snprintf(root, sizeof(root), "%s/ids/root", kf_test_tmpdir());
	snprintf(outside, sizeof(outside), "%s/ids/outside", kf_test_tmpdir());
	snprintf(marker, sizeof(marker), "%s/imported", outside);
	snprintf(p, sizeof(p), "%s/level1/scale", root);
	copy_scale(p);
	snprintf(p, sizeof(p), "%s/scale", outside);
	copy_scale(p);
	/* A KernelBench-format task that leaves a marker when imported. */
	char *evil =
	    kf_xasprintf("open(%s%s%s, 'w').write('imported')\n"
			 "import torch\n"
			 "class Model(torch.nn.Module):\n"
			 "    def forward(self, x):\n        return x\n"
			 "def get_inputs():\n    return [torch.randn(16)]\n"
			 "def get_init_inputs():\n    return []\n",
			 "'", marker, "'");
	snprintf(p, sizeof(p), "%s/evil.py", outside);
	put_file(p, evil);
	free(evil);
	/* Links inside the root to the outside. */
	snprintf(p, sizeof(p), "%s/link", root);
	CHECK(symlink(outside, p) == 0);
	snprintf(p, sizeof(p), "%s/evil.py", outside);
	snprintf(q, sizeof(q), "%s/alias.py", root);
	CHECK(symlink(p, q) == 0);

	const char *extra[] = {"--tasks", root, NULL};
	struct kf_test_serve s;
	kf_test_serve_start(&s, false, extra);
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	char abs_scale[700], abs_evil[700];
	snprintf(abs_scale, sizeof(abs_scale), "%s/scale", outside);
	snprintf(abs_evil, sizeof(abs_evil), "%s/evil", outside);
	struct {
		const char *id, *why;
	} bad_ids[] = {
	    {"../outside/scale", "'.' or '..' component"},
	    {"../outside/evil", "'.' or '..' component"},
	    {"level1/../../outside/scale", "'.' or '..' component"},
	    {abs_scale, "absolute path"},
	    {abs_evil, "absolute path"},
	    {"link/scale", "leads out of the tasks directory"},
	    {"link/evil", "leads out of the tasks directory"},
	    {"alias", "leads out of the tasks directory"},
	    {"level1//scale", "empty component"},
	    {"level1/scale/", "empty component"},
	    {"./level1/scale", "'.' or '..' component"},
	    {"level1/sc ale", "character other than"},
	};
	struct reply r;
	for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
		const char *id = bad_ids[i].id;
		cJSON *b = cJSON_CreateObject();
		cJSON_AddItemToArray(cJSON_AddArrayToObject(b, "items"),
				     item("x", id, "code", good));
		post(s.port, "/v1/score", b, &r);
		CHECK_MSG(r.status == 400, "score %s: %d %s", id, r.status,
			  r.body);
		CHECK_STR(err_code(&r), "bad_field");
		CHECK_CONTAINS(err_msg(&r), "items[0] (id x): problem_id '");
		CHECK_CONTAINS(err_msg(&r), id);
		CHECK_CONTAINS(err_msg(&r), bad_ids[i].why);
		reply_free(&r);

		b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "problem_id", id);
		post(s.port, "/v1/episodes", b, &r);
		CHECK_MSG(r.status == 400, "episode %s: %d %s", id, r.status,
			  r.body);
		CHECK_STR(err_code(&r), "bad_field");
		CHECK_CONTAINS(err_msg(&r), "problem_id '");
		CHECK_CONTAINS(err_msg(&r), bad_ids[i].why);
		reply_free(&r);

		b = cJSON_CreateObject();
		char *qtext = kf_xasprintf("```c\n%s```", good);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(b, "query"),
				     cJSON_CreateString(qtext));
		free(qtext);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(b, "labels"),
				     cJSON_CreateString(id));
		post(s.port, "/v1/openrlhf", b, &r);
		CHECK_MSG(r.status == 400, "openrlhf %s: %d %s", id, r.status,
			  r.body);
		CHECK_STR(err_code(&r), "bad_field");
		CHECK_CONTAINS(err_msg(&r), "labels[0]: label '");
		CHECK_CONTAINS(err_msg(&r), bad_ids[i].why);
		reply_free(&r);
	}
	/* Nothing was evaluated, nothing outside imported. */
	http(s.port, "GET", "/v1/stats", NULL, &r);
	CHECK_MSG(kf_json_num(r.json, "evaluations", -1) == 0, "%s", r.body);
	reply_free(&r);
	CHECK_MSG(!kf_file_exists(marker), "%s was imported", marker);

	/* A nested id inside the root is a task as before. */
	cJSON *b = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(b, "items"),
			     item("in", "level1/scale", "code", good));
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 200, "%d %s", r.status, r.body);
	const cJSON *it =
	    cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "items"), 0);
	CHECK_MSG(!strcmp(kf_json_str(it, "status"), "ok"), "%s: %s",
		  kf_json_str(it, "status"), kf_json_str(it, "reason"));
	reply_free(&r);
	/* An id that is well formed but names nothing: 404 as before. */
	b = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(b, "items"),
			     item("none", "level1/nothing", "code", good));
	post(s.port, "/v1/score", b, &r);
	CHECK_MSG(r.status == 404, "%d %s", r.status, r.body);
	CHECK_STR(err_code(&r), "unknown_problem");
	CHECK_CONTAINS(err_msg(&r), "level1/nothing");
	reply_free(&r);
	kf_test_serve_stop(&s);
	free(good);
}

KF_TESTS(server) = {
    KF_TEST(test_server_handle_without_http),
    KF_TEST(test_server_score_end_to_end),
    KF_TEST(test_server_score_kernelbench),
    KF_TEST(test_server_episode_kernelbench),
    KF_TEST(test_server_episodes),
    KF_TEST(test_server_openrlhf),
    KF_TEST(test_server_echoed_reference_is_not_scored),
    KF_TEST(test_server_health_stats),
    KF_TEST(test_server_bad_requests),
    KF_TEST(test_server_oversized_completion_fails_its_item_only),
    KF_TEST(test_server_nul_in_a_completion_fails_its_item_only),
    KF_TEST(test_server_problem_ids_stay_inside),
    KF_TEST(test_server_slow_client),
    KF_TEST(test_server_queue_full),
    KF_TEST(test_server_openrlhf_deadline),
    KF_TEST(test_server_groups_across_requests),
    KF_TEST(test_server_deadline),
    KF_TEST(test_server_shutdown_answers_in_flight),
    KF_TEST(test_server_sigterm_kills_spinning_evaluation),
    KF_TEST(test_server_integrations),
    KF_TESTS_END,
};
