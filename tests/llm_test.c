/*
 * llm_test.c: the chat-completions client against tests/llm_server.py, a
 * scripted server on 127.0.0.1: what the caller sees for each reply and
 * failure, and what the client sent; and the settings.
 */
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <kforge/eval.h>
#include <kforge/llm.h>
#include <kforge/prompt.h>

#include "chat_server.h"
#include "harness.h"

#define GOOD_CODE                                                              \
	"#include <kforge/kernel.h>\n"                                         \
	"int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int "       \
	"n_out, void *stream)\n"                                               \
	"{\n"                                                                  \
	"\tconst float *x = in[0].data;\n"                                     \
	"\tfloat *y = out[0].data;\n"                                          \
	"\tint64_t b = in[0].shape[0], n = in[0].shape[1];\n"                  \
	"\tfor (int64_t i = 0; i < b; i++) {\n"                                \
	"\t\tfloat s = 0;\n"                                                   \
	"\t\tfor (int64_t j = 0; j < n; j++)\n"                                \
	"\t\t\ts += x[i * n + j];\n"                                           \
	"\t\ty[i] = s;\n"                                                      \
	"\t}\n"                                                                \
	"\t(void)n_in; (void)n_out; (void)stream;\n"                           \
	"\treturn 0;\n"                                                        \
	"}\n"

/* Starts the scripted server with the given script. */
static void server_start(struct kf_test_chat_server *s, const char *script)
{
	kf_test_chat_server_start(s, script, 30);
}

/* The requests the server recorded, as a JSON array (caller frees). */
static cJSON *requests(const struct kf_test_chat_server *s)
{
	struct kf_err err = KF_ERR_INIT;
	char *text = NULL;
	cJSON *arr = cJSON_CreateArray();
	if (kf_file_read(s->log, 64u << 20, &text, NULL, &err) != 0)
		return arr;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		CHECK_MSG(j != NULL, "bad log line %s", line);
		cJSON_AddItemToArray(arr, j);
	}
	free(text);
	return arr;
}

/* Settings for the scripted server: no environment, quick retries. */
static void config(struct kf_llm_config *cfg,
		   const struct kf_test_chat_server *s)
{
	struct kf_err err = KF_ERR_INIT;
	const char *vars[] = {"OPENAI_BASE_URL",
			      "KFORGE_LLM_BASE_URL",
			      "KFORGE_LLM_MODEL",
			      "OPENAI_API_KEY",
			      "KFORGE_LLM_API_KEY",
			      "KFORGE_LLM_TEMPERATURE",
			      "KFORGE_LLM_SAMPLES",
			      "KFORGE_LLM_MAX_TOKENS",
			      "KFORGE_LLM_TIMEOUT_MS",
			      "KFORGE_LLM_CONNECT_TIMEOUT_MS",
			      "KFORGE_LLM_RETRIES",
			      "KFORGE_LLM_BACKOFF_MS",
			      "KFORGE_LLM_MAX_RESPONSE_BYTES",
			      "KFORGE_LLM_MAX_TOKENS_FIELD",
			      "KFORGE_LLM_CONTINUATIONS"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("KFORGE_LOG", "error", 1);
	CHECK_MSG(kf_llm_config_init(cfg, &err) == 0, "%s", err.msg);
	if (s)
		CHECK(kf_llm_config_set(cfg, "base_url", s->url, &err) == 0);
	CHECK(kf_llm_config_set(cfg, "model", "test-model", &err) == 0);
	CHECK(kf_llm_config_set(cfg, "retries", "2", &err) == 0);
	CHECK(kf_llm_config_set(cfg, "backoff_ms", "10", &err) == 0);
	CHECK(kf_llm_config_set(cfg, "timeout_ms", "5000", &err) == 0);
}

static const struct kf_llm_msg two_msgs[] = {
    {"system", "You write kernels."},
    {"user", "Write rowsum."},
};

/* A script of one reply whose content is a code block. */
static char *code_script(const char *code)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *steps = cJSON_AddArrayToObject(root, "steps");
	cJSON *st = cJSON_CreateObject();
	char *content = kf_xasprintf("Analysis: sum rows.\n\n```c\n%s```\n"
				     "Done.",
				     code);
	cJSON_AddStringToObject(st, "content", content);
	cJSON_AddItemToArray(steps, st);
	char *s = kf_json_print(root);
	cJSON_Delete(root);
	free(content);
	return s;
}

static void test_llm_good_code(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	char *script = code_script(GOOD_CODE);
	server_start(&s, script);
	config(&cfg, &s);
	CHECK(kf_llm_config_set(&cfg, "samples", "3", &err) == 0);
	CHECK(kf_llm_config_set(&cfg, "temperature", "0.25", &err) == 0);
	CHECK(kf_llm_config_set(&cfg, "max_tokens", "1234", &err) == 0);
	int rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(r.n == 3);
	CHECK(r.attempts == 1);
	CHECK(r.http_status == 200);
	CHECK(r.prompt_tokens == 11 && r.completion_tokens == 22);
	CHECK_STR(r.model, "test-model");
	CHECK_STR(r.finish_reasons[2], "stop");
	char *code = kf_prompt_extract_code(r.texts[2], 1 << 20);
	CHECK_STR(code, GOOD_CODE);
	free(code);

	/* What went over the wire. */
	cJSON *reqs = requests(&s);
	CHECK(cJSON_GetArraySize(reqs) == 1);
	cJSON *q = cJSON_GetArrayItem(reqs, 0);
	CHECK_STR(kf_json_str(q, "path"), "/v1/chat/completions");
	const cJSON *h = cJSON_GetObjectItem(q, "headers");
	CHECK_STR(kf_json_str(h, "content-type"), "application/json");
	CHECK(kf_json_str(h, "authorization") == NULL);
	const cJSON *b = cJSON_GetObjectItem(q, "body");
	CHECK_STR(kf_json_str(b, "model"), "test-model");
	CHECK(kf_json_num(b, "n", 0) == 3);
	CHECK(kf_json_num(b, "temperature", 0) == 0.25);
	CHECK(kf_json_num(b, "max_tokens", 0) == 1234);
	const cJSON *m = cJSON_GetObjectItem(b, "messages");
	CHECK(cJSON_GetArraySize(m) == 2);
	CHECK_STR(kf_json_str(cJSON_GetArrayItem(m, 0), "role"), "system");
	CHECK_STR(kf_json_str(cJSON_GetArrayItem(m, 1), "content"),
		  "Write rowsum.");
	cJSON_Delete(reqs);
	kf_llm_reply_release(&r);
	CHECK(r.texts == NULL && r.n == 0);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
	free(script);
}

static void test_llm_api_key_sent_and_never_shown(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	server_start(&s, "{\"steps\": [{\"content\": \"hi\"}, {\"status\": "
			 "401, \"body\": \"{\\\"error\\\": {\\\"message\\\": "
			 "\\\"bad key\\\"}}\"}]}");
	config(&cfg, &s);
	setenv("KF_TEST_KEY", "sk-secret-123", 1);
	CHECK(kf_llm_config_set(&cfg, "api_key_env", "KF_TEST_KEY", &err) == 0);
	CHECK(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == 0);
	CHECK_STR(r.texts[0], "hi");
	kf_llm_reply_release(&r);
	/* A refused key: reported at once, naming the status, not the key. */
	int rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK(rc == KF_EIO);
	CHECK(r.attempts == 1 && r.http_status == 401);
	CHECK_CONTAINS(err.msg, "HTTP 401");
	CHECK_CONTAINS(err.msg, "bad key");
	CHECK_CONTAINS(err.msg, s.url);
	CHECK(strstr(err.msg, "sk-secret") == NULL);
	cJSON *reqs = requests(&s);
	const cJSON *h =
	    cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 0), "headers");
	CHECK_STR(kf_json_str(h, "authorization"), "Bearer sk-secret-123");
	cJSON_Delete(reqs);
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

static void test_llm_no_code_block(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	server_start(&s, "{\"steps\": [{\"content\": \"I would use tiling "
			 "in kf_entry, but I will not write it.\", "
			 "\"finish_reason\": \"length\"}]}");
	config(&cfg, &s);
	CHECK(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == 0);
	CHECK(r.n == 1);
	CHECK_STR(r.finish_reasons[0], "length");
	CHECK(kf_prompt_extract_code(r.texts[0], 1 << 20) == NULL);
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

/* A body over the cap aborts the transfer, whether the server announces
 * its length or not, and is not retried. */
static void huge(int no_length)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	char script[200];
	snprintf(script, sizeof(script),
		 "{\"steps\": [{\"huge_bytes\": 8000000, \"no_length\": %s}, "
		 "{\"content\": \"small\"}]}",
		 no_length ? "true" : "false");
	server_start(&s, script);
	config(&cfg, &s);
	CHECK(kf_llm_config_set(&cfg, "max_response_bytes", "65536", &err) ==
	      0);
	int rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK_MSG(rc == KF_ERANGE, "rc %d: %s", rc, err.msg);
	CHECK(r.attempts == 1 && r.n == 0 && r.texts == NULL);
	CHECK_CONTAINS(err.msg, "max_response_bytes (65536)");
	CHECK_CONTAINS(err.msg, s.url);
	/* The next call gets the next reply. */
	CHECK(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == 0);
	CHECK_STR(r.texts[0], "small");
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

static void test_llm_huge_reply_aborted(void)
{
	huge(0);
}

static void test_llm_huge_reply_without_length_aborted(void)
{
	huge(1);
}

static void test_llm_slow_reply_retried_then_reported(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	server_start(&s, "{\"steps\": [{\"delay_ms\": 3000, \"content\": "
			 "\"late\"}, {\"content\": \"on time\"}, "
			 "{\"delay_ms\": 3000}, {\"delay_ms\": 3000}]}");
	config(&cfg, &s);
	CHECK(kf_llm_config_set(&cfg, "timeout_ms", "300", &err) == 0);
	CHECK(kf_llm_config_set(&cfg, "retries", "1", &err) == 0);
	/* A timeout, then a reply in time. */
	int rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(r.attempts == 2);
	CHECK_STR(r.texts[0], "on time");
	kf_llm_reply_release(&r);
	/* Two timeouts: the retries are spent. */
	rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK_MSG(rc == KF_ETIMEDOUT, "rc %d: %s", rc, err.msg);
	CHECK(r.attempts == 2 && r.n == 0);
	CHECK_CONTAINS(err.msg, "after 2 attempts");
	CHECK_CONTAINS(err.msg, "no complete reply within");
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

static void test_llm_429_then_success(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	server_start(&s, "{\"steps\": [{\"status\": 429, \"headers\": "
			 "{\"Retry-After\": \"1\"}, \"body\": \"{\\\"error\\\":"
			 " \\\"slow down\\\"}\"}, {\"content\": \"ok now\"}]}");
	config(&cfg, &s);
	uint64_t t0 = kf_now_ns();
	int rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	double waited_ms = (double)(kf_now_ns() - t0) / 1e6;
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(r.attempts == 2 && r.http_status == 200);
	CHECK_STR(r.texts[0], "ok now");
	/* Retry-After (1 s) replaced the 10 ms backoff. */
	CHECK_MSG(waited_ms >= 950, "retried after %.0f ms", waited_ms);
	cJSON *reqs = requests(&s);
	CHECK(cJSON_GetArraySize(reqs) == 2);
	cJSON_Delete(reqs);
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

static void test_llm_500s_exhaust_retries(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	const char *step = "{\"status\": 500, \"body\": \"{\\\"error\\\": "
			   "{\\\"message\\\": \\\"engine overloaded\\\"}}\"}";
	char *script =
	    kf_xasprintf("{\"steps\": [%s, %s, %s, {\"content\": \"late\"}]}",
			 step, step, step);
	server_start(&s, script);
	config(&cfg, &s);
	int rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK(rc == KF_EIO);
	CHECK(r.attempts == 3 && r.http_status == 500 && r.n == 0);
	CHECK_CONTAINS(err.msg, "after 3 attempts");
	CHECK_CONTAINS(err.msg, "HTTP 500: engine overloaded");
	cJSON *reqs = requests(&s);
	CHECK(cJSON_GetArraySize(reqs) == 3);
	cJSON_Delete(reqs);
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
	free(script);
}

static void test_llm_malformed_json_reported(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	server_start(&s, "{\"steps\": [{\"body\": \"{\\\"choices\\\": [\"}, "
			 "{\"body\": \"{\\\"choices\\\": []}\"}, "
			 "{\"body\": \"{\\\"choices\\\": [{\\\"message\\\": "
			 "{\\\"content\\\": null}}]}\"}]}");
	config(&cfg, &s);
	int rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK(rc == KF_EPROTO);
	CHECK(r.attempts == 1 && r.http_status == 200);
	CHECK_CONTAINS(err.msg, "HTTP 200: the body is not JSON");
	rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK(rc == KF_EPROTO);
	CHECK_CONTAINS(err.msg, "no choices");
	/* A choice without content is an empty text, not an error. */
	rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(r.n == 1);
	CHECK_STR(r.texts[0], "");
	CHECK_STR(r.finish_reasons[0], "");
	CHECK(r.prompt_tokens == -1 && r.model == NULL);
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

static void test_llm_connection_refused_retried(void)
{
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	/* A port that was free a moment ago: nothing listens there. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	close(fd);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/",
		 ntohs(a.sin_port));
	config(&cfg, NULL);
	CHECK(kf_llm_config_set(&cfg, "base_url", url, &err) == 0);
	int rc = kf_llm_chat(&cfg, two_msgs, 2, &r, &err);
	CHECK(rc == KF_EIO);
	CHECK(r.attempts == 3 && r.http_status == 0);
	/* The trailing '/' of the base URL is not doubled. */
	url[strlen(url) - 1] = 0;
	CHECK_CONTAINS(err.msg, url);
	CHECK_CONTAINS(err.msg, "/v1/chat/completions");
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
}

static void test_llm_refuses_without_model(void)
{
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	config(&cfg, NULL);
	free(cfg.model);
	cfg.model = NULL;
	CHECK(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "no LLM model");
	CHECK(r.attempts == 0);
	CHECK(kf_llm_config_set(&cfg, "model", "m", &err) == 0);
	CHECK(kf_llm_chat(&cfg, two_msgs, 0, &r, &err) == KF_EINVAL);
	kf_llm_config_release(&cfg);
}

static void test_llm_config_environment(void)
{
	struct kf_llm_config cfg;
	struct kf_err err = KF_ERR_INIT;
	config(&cfg, NULL);
	kf_llm_config_release(&cfg);
	CHECK(cfg.base_url == NULL && cfg.model == NULL);
	setenv("OPENAI_BASE_URL", "http://a.example/v1", 1);
	setenv("OPENAI_API_KEY", "sk-openai", 1);
	setenv("KFORGE_LLM_MODEL", "qwen", 1);
	setenv("KFORGE_LLM_SAMPLES", "4", 1);
	CHECK_MSG(kf_llm_config_init(&cfg, &err) == 0, "%s", err.msg);
	CHECK_STR(cfg.base_url, "http://a.example/v1");
	CHECK_STR(cfg.api_key, "sk-openai");
	CHECK_STR(cfg.model, "qwen");
	CHECK(cfg.samples == 4);
	CHECK(cfg.temperature == 0.7 && cfg.retries == 4);
	kf_llm_config_release(&cfg);
	/* kforge's own variables win over OpenAI's. */
	setenv("KFORGE_LLM_BASE_URL", "http://b.example/v1", 1);
	setenv("KFORGE_LLM_API_KEY", "sk-kforge", 1);
	CHECK(kf_llm_config_init(&cfg, &err) == 0);
	CHECK_STR(cfg.base_url, "http://b.example/v1");
	CHECK_STR(cfg.api_key, "sk-kforge");
	kf_llm_config_release(&cfg);
	setenv("KFORGE_LLM_SAMPLES", "many", 1);
	CHECK(kf_llm_config_init(&cfg, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "KFORGE_LLM_SAMPLES");
	CHECK_CONTAINS(err.msg, "\"many\" is not an integer");
	kf_llm_config_release(&cfg);
}

static void test_llm_config_set_rejects_bad_values(void)
{
	struct kf_llm_config cfg;
	struct kf_err err = KF_ERR_INIT;
	config(&cfg, NULL);
	CHECK(kf_llm_config_set(&cfg, "samples", "0", &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "samples: 0 is outside [1, 64]");
	CHECK(kf_llm_config_set(&cfg, "temperature", "3", &err) == KF_EINVAL);
	CHECK(kf_llm_config_set(&cfg, "temperature", "nan", &err) == KF_EINVAL);
	CHECK(kf_llm_config_set(&cfg, "base_url", "ftp://x", &err) ==
	      KF_EINVAL);
	CHECK(kf_llm_config_set(&cfg, "api_key", "sk\r\nX-Evil: 1", &err) ==
	      KF_EINVAL);
	CHECK(strstr(err.msg, "Evil") == NULL);
	CHECK(kf_llm_config_set(&cfg, "max_response_bytes", "10", &err) ==
	      KF_EINVAL);
	CHECK(kf_llm_config_set(&cfg, "colour", "red", &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "unknown LLM setting \"colour\"");
	unsetenv("KF_NO_SUCH_KEY");
	CHECK(kf_llm_config_set(&cfg, "api_key_env", "KF_NO_SUCH_KEY", &err) ==
	      KF_EINVAL);
	CHECK_CONTAINS(err.msg, "KF_NO_SUCH_KEY is not set");
	/* Nothing changed. */
	CHECK(cfg.samples == 1 && cfg.temperature == 0.7);
	CHECK(cfg.api_key == NULL);
	CHECK_STR(cfg.base_url, "http://127.0.0.1:8000/v1");
	kf_llm_config_release(&cfg);
}

static char *write_tmp(const char *name, const char *text)
{
	struct kf_err err = KF_ERR_INIT;
	char *p = kf_path_join(kf_test_tmpdir(), name);
	CHECK(kf_file_write_atomic(p, text, strlen(text), &err) == 0);
	return p;
}

static void test_llm_config_file(void)
{
	struct kf_llm_config cfg;
	struct kf_err err = KF_ERR_INIT;
	config(&cfg, NULL);
	char *good = write_tmp("good.json",
			       "{\"base_url\": \"https://api.example.com/v1\","
			       " \"model\": \"big\", \"temperature\": 1.0,"
			       " \"samples\": 8, \"max_tokens\": 0,"
			       " \"max_response_bytes\": 1048576}");
	CHECK_MSG(kf_llm_config_file(&cfg, good, &err) == 0, "%s", err.msg);
	CHECK_STR(cfg.base_url, "https://api.example.com/v1");
	CHECK_STR(cfg.model, "big");
	CHECK(cfg.temperature == 1.0 && cfg.samples == 8);
	CHECK(cfg.max_tokens == 0 && cfg.max_response_bytes == 1048576);
	/* Errors name the file and the key, and change nothing. */
	char *bad =
	    write_tmp("bad.json", "{\"model\": \"other\", \"top_k\": 5}");
	CHECK(kf_llm_config_file(&cfg, bad, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, bad);
	CHECK_CONTAINS(err.msg, "key \"top_k\": unknown key");
	CHECK_STR(cfg.model, "big");
	char *type = write_tmp("type.json",
			       "{\"model\": \"other\", \"samples\": \"2\"}");
	CHECK(kf_llm_config_file(&cfg, type, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "key \"samples\": must be a number");
	char *range = write_tmp("range.json", "{\"samples\": 2.5}");
	CHECK(kf_llm_config_file(&cfg, range, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, range);
	CHECK_CONTAINS(err.msg, "samples");
	char *twice = write_tmp("twice.json", "{\"model\": \"a\", \"model\": "
					      "\"b\"}");
	CHECK(kf_llm_config_file(&cfg, twice, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "given twice");
	char *none = write_tmp("none.json", "{\"temperature\": \"none\", "
					    "\"max_tokens_field\": "
					    "\"max_completion_tokens\"}");
	CHECK_MSG(kf_llm_config_file(&cfg, none, &err) == 0, "%s", err.msg);
	CHECK(isnan(cfg.temperature) && cfg.max_completion_tokens);
	char *hot = write_tmp("hot.json", "{\"temperature\": \"hot\"}");
	CHECK(kf_llm_config_file(&cfg, hot, &err) == KF_EINVAL);
	CHECK_CONTAINS(err.msg, "must be a number or \"none\"");
	free(none);
	free(hot);
	char *notobj = write_tmp("array.json", "[1, 2]");
	CHECK(kf_llm_config_file(&cfg, notobj, &err) == KF_EINVAL);
	CHECK(kf_llm_config_file(&cfg, "/nonexistent/llm.json", &err) ==
	      KF_ENOENT);
	CHECK(cfg.samples == 8);
	CHECK_STR(cfg.model, "big");
	kf_llm_config_release(&cfg);
	free(good);
	free(bad);
	free(type);
	free(range);
	free(twice);
	free(notobj);
}

/* The body of request k the server recorded (borrowed from reqs). */
static const cJSON *request_body_at(const cJSON *reqs, int k)
{
	return cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, k), "body");
}

/* OpenAI's o-series and gpt-5 take max_completion_tokens and only their
 * own temperature: both can be asked for. */
static void test_llm_max_completion_tokens_and_no_temperature(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	server_start(&s, "{\"steps\": [{\"content\": \"a\"}, "
			 "{\"content\": \"b\"}]}");
	config(&cfg, &s);
	CHECK(kf_llm_config_set(&cfg, "max_tokens_field",
				"max_completion_tokens", &err) == 0);
	CHECK(kf_llm_config_set(&cfg, "temperature", "none", &err) == 0);
	CHECK_MSG(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == 0, "%s", err.msg);
	CHECK(r.max_tokens == 8192);
	kf_llm_reply_release(&r);
	/* Back to the defaults' names. */
	CHECK(kf_llm_config_set(&cfg, "max_tokens_field", "max_tokens", &err) ==
	      0);
	CHECK(kf_llm_config_set(&cfg, "temperature", "0.5", &err) == 0);
	CHECK_MSG(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == 0, "%s", err.msg);
	cJSON *reqs = requests(&s);
	const cJSON *b0 = request_body_at(reqs, 0),
		    *b1 = request_body_at(reqs, 1);
	CHECK(kf_json_num(b0, "max_completion_tokens", 0) == 8192);
	CHECK(!cJSON_GetObjectItem(b0, "max_tokens"));
	CHECK(!cJSON_GetObjectItem(b0, "temperature"));
	CHECK(kf_json_num(b1, "max_tokens", 0) == 8192);
	CHECK(!cJSON_GetObjectItem(b1, "max_completion_tokens"));
	CHECK(kf_json_num(b1, "temperature", 0) == 0.5);
	cJSON_Delete(reqs);
	CHECK(kf_llm_config_set(&cfg, "max_tokens_field", "max_length", &err) ==
	      KF_EINVAL);
	CHECK_CONTAINS(err.msg, "max_tokens_field: \"max_length\" is neither");
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

/* vLLM answers 400 when prompt and budget exceed the model's context: the
 * request goes again at once with the budget that fits. A prompt too long
 * by itself is reported at once. */
static void test_llm_context_overflow_lowers_the_budget(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	server_start(
	    &s,
	    "{\"steps\": [{\"status\": 400, \"body\": \"{\\\"error\\\": "
	    "{\\\"message\\\": \\\"'max_tokens' or 'max_completion_tokens' is "
	    "too large: 8192. This model's maximum context length is 4096 "
	    "tokens and your request has 2778 input tokens (8192 > 4096 - "
	    "2778).\\\", \\\"type\\\": \\\"BadRequestError\\\", \\\"code\\\": "
	    "400}}\"}, {\"content\": \"fits\"}, {\"status\": 400, \"body\": "
	    "\"{\\\"error\\\": {\\\"message\\\": \\\"This model's maximum "
	    "context length is 4096 tokens. However, your request has 5000 "
	    "input tokens. Please reduce the length of the input "
	    "messages.\\\"}}\"}]}");
	config(&cfg, &s);
	CHECK_MSG(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == 0, "%s", err.msg);
	CHECK_STR(r.texts[0], "fits");
	CHECK(r.attempts == 2 && r.max_tokens == 4096 - 2778);
	kf_llm_reply_release(&r);
	CHECK(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == KF_EIO);
	CHECK(r.attempts == 1);
	CHECK_CONTAINS(err.msg, "HTTP 400");
	CHECK_CONTAINS(err.msg, "5000 input tokens");
	cJSON *reqs = requests(&s);
	CHECK(cJSON_GetArraySize(reqs) == 3);
	CHECK(kf_json_num(request_body_at(reqs, 0), "max_tokens", 0) == 8192);
	CHECK(kf_json_num(request_body_at(reqs, 1), "max_tokens", 0) == 1318);
	cJSON_Delete(reqs);
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

/* A completion cut at the budget is continued: the conversation, the cut
 * text as the assistant's turn and a request to go on; the texts join. */
static void test_llm_cut_reply_is_continued(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	server_start(&s, "{\"steps\": [{\"content\": \"```c\\nint a;\", "
			 "\"finish_reason\": \"length\"}, {\"content\": "
			 "\"\\nint b;\\n```\"}, {\"content\": \"cut\", "
			 "\"finish_reason\": \"length\"}]}");
	config(&cfg, &s);
	CHECK_MSG(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == 0, "%s", err.msg);
	CHECK_STR(r.texts[0], "```c\nint a;\nint b;\n```");
	CHECK_STR(r.finish_reasons[0], "stop");
	CHECK(r.continued == 1 && r.attempts == 2);
	kf_llm_reply_release(&r);
	cJSON *reqs = requests(&s);
	const cJSON *msgs =
	    cJSON_GetObjectItem(request_body_at(reqs, 1), "messages");
	CHECK(cJSON_GetArraySize(msgs) == 4);
	const cJSON *asst = cJSON_GetArrayItem(msgs, 2);
	CHECK_STR(kf_json_str(asst, "role"), "assistant");
	CHECK_STR(kf_json_str(asst, "content"), "```c\nint a;");
	CHECK_STR(kf_json_str(cJSON_GetArrayItem(msgs, 3), "role"), "user");
	CHECK(kf_json_num(request_body_at(reqs, 1), "n", 0) == 1);
	cJSON_Delete(reqs);
	/* With no continuations the cut text comes back as it is. */
	CHECK(kf_llm_config_set(&cfg, "continuations", "0", &err) == 0);
	CHECK_MSG(kf_llm_chat(&cfg, two_msgs, 2, &r, &err) == 0, "%s", err.msg);
	CHECK_STR(r.texts[0], "cut");
	CHECK_STR(r.finish_reasons[0], "length");
	CHECK(r.continued == 0);
	CHECK(kf_llm_config_set(&cfg, "continuations", "9", &err) == KF_EINVAL);
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
}

/*
 * Two turns: the model's broken code is evaluated, the result becomes
 * feedback, and the second request carries the whole conversation.
 */
static void test_llm_multi_turn_feedback(void)
{
	struct kf_test_chat_server s;
	struct kf_llm_config cfg;
	struct kf_llm_reply r = KF_LLM_REPLY_INIT;
	struct kf_err err = KF_ERR_INIT;
	struct kf_task *task = NULL;
	cJSON *res = NULL;
	char *script = code_script("#include <kforge/kernel.h>\n"
				   "int kf_entry(const DLTensor *in, int n_in, "
				   "DLTensor *out, int n_out, void *stream)\n"
				   "{\n\treturn undeclared_name;\n}\n");
	server_start(&s, script);
	config(&cfg, &s);
	char *cache = kf_path_join(kf_test_tmpdir(), "cache");
	setenv("KFORGE_CACHE", cache, 1);
	CHECK(kf_task_load("tests/fixtures/rowsum", &task, &err) == 0);
	struct kf_prompt_input in = {task, "host", "/* reference */", NULL, 0,
				     NULL, NULL};
	char *sys = NULL, *user = NULL;
	CHECK_MSG(
	    kf_prompt_render(NULL, "contrastive", &in, &sys, &user, &err) == 0,
	    "%s", err.msg);
	struct kf_llm_msg msgs[4] = {{"system", sys}, {"user", user}};
	CHECK_MSG(kf_llm_chat(&cfg, msgs, 2, &r, &err) == 0, "%s", err.msg);
	char *code = kf_prompt_extract_code(r.texts[0], 1 << 20);
	CHECK(code != NULL);
	char *path = write_tmp("cand.c", code);
	struct kf_eval_opts o = KF_EVAL_OPTS_INIT;
	o.seed = 1;
	o.no_timing = true;
	o.include_dir = "include";
	CHECK_MSG(kf_eval("tests/fixtures/rowsum", path, &o, &res, &err) == 0,
		  "%s", err.msg);
	CHECK_STR(kf_json_str(res, "status"), "compile_error");
	char *fb = kf_prompt_feedback(res);
	in.feedback = fb;
	in.previous = code;
	char *sys2 = NULL, *user2 = NULL;
	CHECK(kf_prompt_render(NULL, "feedback", &in, &sys2, &user2, &err) ==
	      0);
	CHECK_CONTAINS(user2, "undeclared_name");
	msgs[2].role = "assistant";
	msgs[2].content = r.texts[0];
	msgs[3].role = "user";
	msgs[3].content = user2;
	/* The script has ended: a 410, reported at once. */
	struct kf_llm_reply r2 = KF_LLM_REPLY_INIT;
	CHECK(kf_llm_chat(&cfg, msgs, 4, &r2, &err) == KF_EIO);
	CHECK(r2.attempts == 1 && r2.http_status == 410);
	CHECK_CONTAINS(err.msg, "script exhausted");
	kf_llm_reply_release(&r2);
	cJSON *reqs = requests(&s);
	CHECK(cJSON_GetArraySize(reqs) == 2);
	const cJSON *m = cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(reqs, 1), "body"),
	    "messages");
	CHECK(cJSON_GetArraySize(m) == 4);
	CHECK_STR(kf_json_str(cJSON_GetArrayItem(m, 2), "role"), "assistant");
	CHECK_CONTAINS(kf_json_str(cJSON_GetArrayItem(m, 2), "content"),
		       "undeclared_name");
	CHECK_CONTAINS(kf_json_str(cJSON_GetArrayItem(m, 3), "content"),
		       "Status: compile_error");
	cJSON_Delete(reqs);
	cJSON_Delete(res);
	free(fb);
	free(sys2);
	free(user2);
	free(path);
	free(code);
	free(sys);
	free(user);
	free(cache);
	kf_task_free(task);
	kf_llm_reply_release(&r);
	kf_llm_config_release(&cfg);
	kf_test_chat_server_stop(&s);
	free(script);
}

KF_TESTS(llm) = {
    KF_TEST(test_llm_good_code),
    KF_TEST(test_llm_api_key_sent_and_never_shown),
    KF_TEST(test_llm_no_code_block),
    KF_TEST(test_llm_huge_reply_aborted),
    KF_TEST(test_llm_huge_reply_without_length_aborted),
    KF_TEST(test_llm_slow_reply_retried_then_reported),
    KF_TEST(test_llm_429_then_success),
    KF_TEST(test_llm_500s_exhaust_retries),
    KF_TEST(test_llm_malformed_json_reported),
    KF_TEST(test_llm_connection_refused_retried),
    KF_TEST(test_llm_refuses_without_model),
    KF_TEST(test_llm_config_environment),
    KF_TEST(test_llm_config_set_rejects_bad_values),
    KF_TEST(test_llm_config_file),
    KF_TEST(test_llm_multi_turn_feedback),
    KF_TEST(test_llm_max_completion_tokens_and_no_temperature),
    KF_TEST(test_llm_context_overflow_lowers_the_budget),
    KF_TEST(test_llm_cut_reply_is_continued),
    KF_TESTS_END,
};
