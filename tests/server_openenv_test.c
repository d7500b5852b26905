/*
 * server_openenv_test.c: OpenEnv's protocol on the real kforge-serve
 * (docs/rl.md, "OpenEnv"): the HTTP routes, and sessions over a WebSocket
 * driven by a minimal client here (RFC 6455: masked frames out, unmasked
 * in); host task tests/fixtures/scale. OpenEnv's own Python client runs
 * where openenv-core is installed ($KFORGE_OPENENV_PYTHON, else python3).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
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
#include <kforge/server.h>

#include "../src/server/server_int.h"
#include "harness.h"
#include "serve_proc.h"

/* kforge-serve with scale as the default OpenEnv problem, checks only. */
static void start(struct kf_test_serve *s)
{
	const char *const extra[] = {"--openenv-problem", "scale", NULL};
	kf_test_serve_start(s, false, extra);
}

static void put(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		CHECK(w > 0);
		c += w;
		n -= (size_t)w;
	}
}

/* One HTTP request; the status, and the body's JSON in *json. */
static int http(int port, const char *method, const char *path,
		const char *body, cJSON **json)
{
	char *out = NULL;
	int status = kf_test_http(port, method, path, body, &out);
	CHECK_MSG(status > 0, "no status line from %s %s", method, path);
	*json = cJSON_Parse(out);
	CHECK_MSG(*json, "not JSON: %.300s", out);
	free(out);
	return status;
}

#define WRONG_SRC "```c\n" KF_TEST_WRONG_SCALE_SRC "```\n"

/* The first error's member of a {"detail": [...]} answer. */
static const cJSON *detail0(const cJSON *j)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(j, "detail"), 0);
}

/* Its loc joined by dots, in buf. */
static const char *loc_of(const cJSON *e, char *buf, size_t n)
{
	buf[0] = 0;
	const cJSON *p;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(e, "loc"))
	{
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, "%s%s", k ? "." : "", p->valuestring);
	}
	return buf;
}

static void test_server_openenv_accept_key(void)
{
	/* RFC 6455 section 1.3's example */
	char out[29];
	kf_server_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", out);
	CHECK_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

/* gpu_info on a device backend: the device of the latest evaluation, from
 * its worker's description (environment.device; here a cuda worker's on an
 * H200), with what the description holds. */
static void test_server_openenv_gpu_info_line(void)
{
	cJSON *d = cJSON_Parse(
	    "{\"kind\": \"gpu\", \"name\": \"NVIDIA H200\", "
	    "\"compute_capability\": \"9.0\", \"sms\": 132, "
	    "\"memory_bytes\": 150109880320, \"cuda_driver_api\": \"13.0\", "
	    "\"driver\": \"580.95.05\", \"nvml\": true}");
	CHECK(d);
	char *line = srv_device_line(d);
	CHECK_STR(line, "NVIDIA H200 (150.1 GB, compute capability 9.0, "
			"driver 580.95.05, CUDA 13.0)");
	free(line);
	/* Without NVML the worker has no driver string. */
	cJSON_DeleteItemFromObject(d, "driver");
	line = srv_device_line(d);
	CHECK_STR(line,
		  "NVIDIA H200 (150.1 GB, compute capability 9.0, CUDA 13.0)");
	free(line);
	cJSON_Delete(d);
	/* The PyTorch bridge's description (KernelBench-format tasks). */
	d = cJSON_Parse("{\"kind\": \"cuda\", \"name\": \"NVIDIA H200\", "
			"\"memory_bytes\": 150109880320, \"capability\": \"9.0\", "
			"\"torch\": \"2.11.0+cu130\", \"torch_cuda\": \"13.0\"}");
	line = srv_device_line(d);
	CHECK_STR(line,
		  "NVIDIA H200 (150.1 GB, compute capability 9.0, CUDA 13.0)");
	free(line);
	cJSON_Delete(d);
	d = cJSON_Parse("{\"name\": \"NVIDIA H200\"}");
	line = srv_device_line(d);
	CHECK_STR(line, "NVIDIA H200");
	free(line);
	cJSON_Delete(d);
	/* No device, or none named: the caller says the backend. */
	CHECK(!srv_device_line(NULL));
	d = cJSON_Parse("{\"memory_bytes\": 1}");
	CHECK(!srv_device_line(d));
	cJSON_Delete(d);
}

/* The observation has kernrl's KernelObservation fields with their types
 * (OpenEnv's envs/kernrl/models.py:35-62), and kforge's extras only in its
 * metadata. step: after a step (else after a reset); compiled, correct:
 * what the step's kernel should show. */
static void check_kernrl_obs(const cJSON *obs, bool step, bool correct)
{
	static const char *const str[] = {"problem_id", "problem_description",
					  "reference_code", "gpu_info",
					  "feedback", NULL};
	for (int i = 0; str[i]; i++)
		CHECK_MSG(cJSON_IsString(cJSON_GetObjectItem(obs, str[i])),
			  "%s is not a string", str[i]);
	CHECK(strlen(kf_json_str(obs, "problem_description")) > 20);
	CHECK_CONTAINS(kf_json_str(obs, "reference_code"), "kf_entry");
	CHECK_CONTAINS(kf_json_str(obs, "gpu_info"), "host CPU: ");
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(obs, "turn")));
	CHECK(kf_json_num(obs, "max_turns", 0) >= 1);
	CHECK(cJSON_IsBool(cJSON_GetObjectItem(obs, "compilation_success")));
	static const char *const kernrl[] = {
	    "problem_id",	   "problem_description", "reference_code",
	    "gpu_info",		   "turn",		  "max_turns",
	    "feedback",		   "compilation_success", "compilation_error",
	    "correctness_pass",	   "max_diff",		  "speedup",
	    "metadata",		   NULL};
	int n = 0;
	for (int i = 0; kernrl[i]; i++, n++)
		CHECK_MSG(cJSON_GetObjectItem(obs, kernrl[i]), "no %s",
			  kernrl[i]);
	CHECK_MSG(cJSON_GetArraySize(obs) == n,
		  "the observation has %d fields, kernrl's %d",
		  cJSON_GetArraySize(obs), n);
	const cJSON *meta = cJSON_GetObjectItem(obs, "metadata");
	CHECK(cJSON_IsObject(meta));
	CHECK(cJSON_IsString(cJSON_GetObjectItem(meta, "episode_id")));
	if (!step) {
		CHECK_STR(kf_json_str(obs, "feedback"), "");
		CHECK(kf_json_num(obs, "turn", -1) == 0);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(obs, "compilation_success")));
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(obs, "correctness_pass")));
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(obs, "speedup")));
		CHECK(cJSON_IsString(cJSON_GetObjectItem(meta, "system")));
		return;
	}
	CHECK(strlen(kf_json_str(obs, "feedback")) > 10);
	CHECK(kf_json_num(obs, "turn", 0) >= 1);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(obs, "compilation_success")));
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(obs, "compilation_error")));
	CHECK(cJSON_IsBool(cJSON_GetObjectItem(obs, "correctness_pass")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(obs, "correctness_pass")) ==
	      correct);
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(obs, "max_diff")));
	if (!correct)
		CHECK(kf_json_num(obs, "max_diff", 0) > 0);
	/* A number where the kernel was timed (the test server may not). */
	const cJSON *sp = cJSON_GetObjectItem(obs, "speedup");
	CHECK(cJSON_IsNumber(sp) || cJSON_IsNull(sp));
	CHECK_STR(kf_json_str(meta, "status"), correct ? "ok" : "wrong_answer");
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(meta, "item")));
}

/* The state has kernrl's KernelState fields (models.py:65-76). */
static void check_kernrl_state(const cJSON *st)
{
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(st, "step_count")));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(st, "turn")));
	CHECK(kf_json_num(st, "max_turns", 0) >= 1);
	CHECK(kf_json_num(st, "best_speedup", -1) >= 0);
	CHECK(cJSON_IsBool(cJSON_GetObjectItem(st, "solved")));
	CHECK(cJSON_GetObjectItem(st, "episode_id"));
	CHECK(cJSON_GetObjectItem(st, "problem_id"));
}

static void test_server_openenv_http(void)
{
	struct kf_test_serve s;
	start(&s);
	cJSON *j;
	char buf[256];
	CHECK(http(s.port, "GET", "/health", NULL, &j) == 200);
	CHECK_STR(kf_json_str(j, "status"), "healthy");
	cJSON_Delete(j);
	CHECK(http(s.port, "GET", "/metadata", NULL, &j) == 200);
	CHECK_STR(kf_json_str(j, "name"), "kforge");
	CHECK(strlen(kf_json_str(j, "description")) > 20);
	cJSON_Delete(j);
	CHECK(http(s.port, "GET", "/schema", NULL, &j) == 200);
	const cJSON *act = cJSON_GetObjectItem(j, "action");
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(act, "properties"), "completion")));
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(j, "observation")));
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(j, "state")));
	cJSON_Delete(j);

	/* A reset with no body: the default problem's prompt. */
	CHECK(http(s.port, "POST", "/reset", NULL, &j) == 200);
	const cJSON *obs = cJSON_GetObjectItem(j, "observation");
	CHECK_STR(kf_json_str(obs, "problem_id"), "scale");
	CHECK_CONTAINS(kf_json_str(obs, "problem_description"), "scale");
	check_kernrl_obs(obs, false, false);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "reward")));
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(j, "done")));
	cJSON_Delete(j);
	/* Stateless, as upstream's: a fresh environment's state. */
	CHECK(http(s.port, "GET", "/state", NULL, &j) == 200);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "episode_id")));
	CHECK(kf_json_num(j, "step_count", -1) == 0);
	check_kernrl_state(j);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(j, "solved")));
	cJSON_Delete(j);
	CHECK(http(s.port, "POST", "/reset",
		   "{\"problem_id\": \"no/such\"}", &j) == 404);
	CHECK_STR(kf_json_str(detail0(j), "type"), "unknown_problem");
	CHECK_CONTAINS(kf_json_str(detail0(j), "msg"), "no/such");
	cJSON_Delete(j);
	CHECK(http(s.port, "POST", "/reset", "{\"problem\": \"scale\"}", &j) ==
	      422);
	CHECK_STR(loc_of(detail0(j), buf, sizeof(buf)), "body.problem");
	CHECK_CONTAINS(kf_json_str(detail0(j), "msg"), "problem_id");
	cJSON_Delete(j);

	/* A stateless step: one scored turn. */
	cJSON *b = cJSON_CreateObject();
	cJSON *a = cJSON_AddObjectToObject(b, "action");
	cJSON_AddStringToObject(a, "completion", WRONG_SRC);
	char *text = kf_json_print(b);
	cJSON_Delete(b);
	CHECK(http(s.port, "POST", "/step", text, &j) == 200);
	free(text);
	obs = cJSON_GetObjectItem(j, "observation");
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(
				  cJSON_GetObjectItem(obs, "metadata"), "item"),
			      "status"),
		  "wrong_answer");
	CHECK_CONTAINS(kf_json_str(obs, "feedback"), "wrong_answer");
	check_kernrl_obs(obs, true, false);
	CHECK(kf_json_num(j, "reward", 0) < 0);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "done")));
	cJSON_Delete(j);
	/* kernrl's action, {"code": SOURCE}: a correct kernel. */
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(cJSON_AddObjectToObject(b, "action"), "code",
				good);
	free(good);
	text = kf_json_print(b);
	cJSON_Delete(b);
	CHECK(http(s.port, "POST", "/step", text, &j) == 200);
	free(text);
	check_kernrl_obs(cJSON_GetObjectItem(j, "observation"), true, true);
	cJSON_Delete(j);
	/* A kernel that does not compile: kernrl's compilation fields. */
	CHECK(http(s.port, "POST", "/step",
		   "{\"action\": {\"code\": \"int kf_entry(void) { syntax error\"}}",
		   &j) == 200);
	obs = cJSON_GetObjectItem(j, "observation");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(obs, "compilation_success")));
	CHECK(cJSON_IsString(cJSON_GetObjectItem(obs, "compilation_error")));
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(obs, "correctness_pass")));
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(obs, "max_diff")));
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(obs, "metadata"), "status"),
		  "compile_error");
	cJSON_Delete(j);

	/* Bad actions: 422, FastAPI's detail naming the field. */
	CHECK(http(s.port, "POST", "/step",
		   "{\"action\": {\"code\": \"x\", \"kernel\": 1}}", &j) == 422);
	CHECK_STR(kf_json_str(detail0(j), "type"), "extra_forbidden");
	CHECK_STR(loc_of(detail0(j), buf, sizeof(buf)), "body.action.kernel");
	cJSON_Delete(j);
	CHECK(http(s.port, "POST", "/step", "{\"timeout_s\": 5}", &j) == 422);
	CHECK_STR(kf_json_str(detail0(j), "type"), "missing");
	CHECK_STR(loc_of(detail0(j), buf, sizeof(buf)), "body.action");
	cJSON_Delete(j);
	CHECK(http(s.port, "POST", "/step", "{\"action\": {\"code\": 7}}",
		   &j) == 422);
	CHECK_STR(loc_of(detail0(j), buf, sizeof(buf)), "body.action.code");
	cJSON_Delete(j);
	CHECK(http(s.port, "GET", "/step", NULL, &j) == 405);
	cJSON_Delete(j);
	/* What OpenEnv's validator reads besides (openenv validate --url). */
	CHECK(http(s.port, "GET", "/openapi.json", NULL, &j) == 200);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(j, "info"), "version"),
		  "1.0.0");
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "paths"), "/reset"));
	cJSON_Delete(j);
	CHECK(http(s.port, "POST", "/mcp", "{\"method\": \"tools/list\", "
		   "\"id\": 3}", &j) == 200);
	CHECK_STR(kf_json_str(j, "jsonrpc"), "2.0");
	CHECK(kf_json_num(cJSON_GetObjectItem(j, "error"), "code", 0) ==
	      -32601);
	CHECK(kf_json_num(j, "id", 0) == 3);
	cJSON_Delete(j);
	/* kforge's own health stays at /v1/health. */
	CHECK(http(s.port, "GET", "/v1/health", NULL, &j) == 200);
	CHECK_STR(kf_json_str(j, "status"), "ok");
	cJSON_Delete(j);
	kf_test_serve_stop(&s);
}

/* ---- a minimal WebSocket client ---- */

/* Opens /ws: the 101 and its Sec-WebSocket-Accept checked. */
static int ws_open(int port)
{
	int fd = kf_test_dial(port);
	const char *req = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			  "Upgrade: websocket\r\nConnection: Upgrade\r\n"
			  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
			  "Sec-WebSocket-Version: 13\r\n\r\n";
	put(fd, req, strlen(req));
	/* Byte by byte up to the blank line: nothing of a frame is read. */
	char head[2048];
	size_t n = 0;
	while (n < sizeof(head) - 1) {
		CHECK(recv(fd, head + n, 1, 0) == 1);
		n++;
		if (n >= 4 && !memcmp(head + n - 4, "\r\n\r\n", 4))
			break;
	}
	head[n] = 0;
	CHECK_CONTAINS(head, "HTTP/1.1 101");
	CHECK_CONTAINS(head, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	return fd;
}

/* A frame whose header says total bytes, and n of them (n <= total): FIN
 * and the opcode in b0's bits, masked as a client's must be unless told
 * otherwise. */
static void ws_frame_part(int fd, int b0, bool masked, size_t total,
			  const char *data, size_t n)
{
	unsigned char h[14];
	size_t k = 0;
	unsigned char m = masked ? 0x80 : 0;
	h[k++] = (unsigned char)b0;
	if (total < 126) {
		h[k++] = (unsigned char)(m | total);
	} else if (total <= 0xffff) {
		h[k++] = m | 126;
		h[k++] = (unsigned char)(total >> 8);
		h[k++] = (unsigned char)total;
	} else {
		h[k++] = m | 127;
		for (int i = 7; i >= 0; i--)
			h[k++] = (unsigned char)((uint64_t)total >> (8 * i));
	}
	unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
	if (masked) {
		memcpy(h + k, mask, 4);
		k += 4;
	}
	put(fd, h, k);
	char *p = kf_xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(masked ? data[i] ^ mask[i % 4] : data[i]);
	put(fd, p, n);
	free(p);
}

static void ws_frame(int fd, int b0, bool masked, const char *data, size_t n)
{
	ws_frame_part(fd, b0, masked, n, data, n);
}

/* A whole message in one frame. */
static void ws_send(int fd, int op, const char *data, size_t n)
{
	ws_frame(fd, 0x80 | op, true, data, n);
}

static void get_all(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t r = recv(fd, c, n, 0);
		CHECK_MSG(r > 0, "the connection ended");
		c += r;
		n -= (size_t)r;
	}
}

/* One frame: its opcode, the payload in *data (caller frees). */
static int ws_recv(int fd, char **data, size_t *len)
{
	unsigned char h[2];
	get_all(fd, h, 2);
	CHECK_MSG(!(h[1] & 0x80), "a server frame is masked");
	uint64_t n = h[1] & 127;
	if (n >= 126) {
		unsigned char e[8];
		int k = n == 126 ? 2 : 8;
		get_all(fd, e, (size_t)k);
		n = 0;
		for (int i = 0; i < k; i++)
			n = n << 8 | e[i];
	}
	*data = kf_xmalloc(n + 1);
	get_all(fd, *data, (size_t)n);
	(*data)[n] = 0;
	*len = (size_t)n;
	return h[0] & 15;
}

/* Sends a text message and reads the answer's JSON. */
static cJSON *ws_ask(int fd, const char *msg)
{
	ws_send(fd, 1, msg, strlen(msg));
	char *p;
	size_t n;
	CHECK(ws_recv(fd, &p, &n) == 1);
	cJSON *j = cJSON_Parse(p);
	CHECK_MSG(j, "not JSON: %.300s", p);
	free(p);
	return j;
}

static cJSON *ws_step(int fd, const char *key, const char *text)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "type", "step");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "data"), key, text);
	char *t = kf_json_print(m);
	cJSON_Delete(m);
	cJSON *j = ws_ask(fd, t);
	free(t);
	return j;
}

static const char *ws_code(const cJSON *j)
{
	return kf_json_str(cJSON_GetObjectItem(j, "data"), "code");
}

/* Waits until the episode is no more (the session ended it). */
static void episode_gone(int port, const char *id)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/episodes/%s", id);
	int st = 0;
	for (int i = 0; i < 100; i++) {
		cJSON *j;
		st = http(port, "GET", path, NULL, &j);
		cJSON_Delete(j);
		if (st == 404)
			return;
		kf_test_sleep_ms(50);
	}
	CHECK_MSG(0, "episode %s still answers %d", id, st);
}

static void test_server_openenv_websocket(void)
{
	struct kf_test_serve s;
	start(&s);
	int fd = ws_open(s.port);
	/* A step before a reset, and a state of a fresh session. */
	cJSON *j = ws_step(fd, "code", "x");
	CHECK_STR(kf_json_str(j, "type"), "error");
	CHECK_STR(ws_code(j), "EXECUTION_ERROR");
	CHECK_CONTAINS(kf_json_str(cJSON_GetObjectItem(j, "data"), "message"),
		       "reset");
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"state\"}");
	CHECK_STR(kf_json_str(j, "type"), "state");
	CHECK(cJSON_IsNull(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(j, "data"), "episode_id")));
	check_kernrl_state(cJSON_GetObjectItem(j, "data"));
	cJSON_Delete(j);

	j = ws_ask(fd, "{\"type\": \"reset\", \"data\": {\"problem_id\": "
		       "\"scale\", \"max_turns\": 3}}");
	CHECK_STR(kf_json_str(j, "type"), "observation");
	const cJSON *d = cJSON_GetObjectItem(j, "data");
	const cJSON *obs = cJSON_GetObjectItem(d, "observation");
	char *id = kf_xstrdup(
	    kf_json_str(cJSON_GetObjectItem(obs, "metadata"), "episode_id"));
	CHECK(kf_json_num(obs, "max_turns", 0) == 3);
	check_kernrl_obs(obs, false, false);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(d, "reward")));
	cJSON_Delete(j);

	/* A ping is answered at once with its payload. */
	ws_send(fd, 9, "hi", 2);
	char *p;
	size_t n;
	CHECK(ws_recv(fd, &p, &n) == 10);
	CHECK(n == 2 && !memcmp(p, "hi", 2));
	free(p);

	j = ws_step(fd, "completion", WRONG_SRC);
	CHECK_STR(kf_json_str(j, "type"), "observation");
	d = cJSON_GetObjectItem(j, "data");
	obs = cJSON_GetObjectItem(d, "observation");
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(obs, "metadata"), "status"),
		  "wrong_answer");
	check_kernrl_obs(obs, true, false);
	CHECK(kf_json_num(obs, "turn", 0) == 1);
	CHECK(kf_json_num(d, "reward", 0) < 0);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(d, "done")));
	cJSON_Delete(j);
	char *good = kf_test_text("tests/fixtures/scale/candidates/sum.c");
	j = ws_step(fd, "code", good);
	free(good);
	d = cJSON_GetObjectItem(j, "data");
	obs = cJSON_GetObjectItem(d, "observation");
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(
				  cJSON_GetObjectItem(obs, "metadata"), "item"),
			      "status"),
		  "ok");
	check_kernrl_obs(obs, true, true);
	CHECK(kf_json_num(obs, "turn", 0) == 2);
	double sp = kf_json_num(obs, "speedup", 0);
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"state\"}");
	d = cJSON_GetObjectItem(j, "data");
	CHECK_STR(kf_json_str(d, "episode_id"), id);
	CHECK(kf_json_num(d, "step_count", 0) == 2);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(d, "rewards")) == 2);
	check_kernrl_state(d);
	CHECK(kf_json_num(d, "turn", 0) == 2);
	CHECK(kf_json_num(d, "best_speedup", -1) == sp);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(d, "solved")) == (sp > 1.05));
	cJSON_Delete(j);

	/* Bad messages: OpenEnv's codes, the session goes on. */
	j = ws_step(fd, "kernel", "x");
	CHECK_STR(ws_code(j), "VALIDATION_ERROR");
	CHECK_CONTAINS(kf_json_str(cJSON_GetObjectItem(j, "data"), "message"),
		       "kernel");
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"step\"");
	CHECK_STR(ws_code(j), "INVALID_JSON");
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"jump\"}");
	CHECK_STR(ws_code(j), "UNKNOWN_TYPE");
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"state\", \"data\": {}}");
	CHECK_STR(ws_code(j), "VALIDATION_ERROR");
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"reset\", \"data\": {\"problem_id\": "
		       "\"no/such\"}}");
	CHECK_STR(ws_code(j), "EXECUTION_ERROR");
	CHECK_CONTAINS(kf_json_str(cJSON_GetObjectItem(j, "data"), "message"),
		       "no/such");
	cJSON_Delete(j);
	/* The failed reset left the episode as it was. */
	j = ws_ask(fd, "{\"type\": \"state\"}");
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(j, "data"), "episode_id"),
		  id);
	cJSON_Delete(j);

	/* The socket closing, with no word, ends the session's episode. */
	close(fd);
	episode_gone(s.port, id);
	free(id);

	/* {"type": "close"}: a close frame back, the episode ended. */
	fd = ws_open(s.port);
	j = ws_ask(fd, "{\"type\": \"reset\"}");
	id = kf_xstrdup(kf_json_str(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "data"),
						    "observation"),
				"metadata"),
	    "episode_id"));
	cJSON_Delete(j);
	const char *bye = "{\"type\": \"close\"}";
	ws_send(fd, 1, bye, strlen(bye));
	CHECK(ws_recv(fd, &p, &n) == 8);
	CHECK(n >= 2 && ((unsigned char)p[0] << 8 | (unsigned char)p[1]) ==
			    1000);
	free(p);
	ws_send(fd, 8, "\x03\xe8", 2);
	close(fd);
	episode_gone(s.port, id);
	free(id);

	/* A handshake of another version is refused. */
	fd = kf_test_dial(s.port);
	const char *req = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
			  "Connection: Upgrade\r\nSec-WebSocket-Version: 8\r\n"
			  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
	put(fd, req, strlen(req));
	char head[512] = {0};
	CHECK(recv(fd, head, sizeof(head) - 1, 0) > 0);
	CHECK_CONTAINS(head, "HTTP/1.1 400");
	close(fd);
	kf_test_serve_stop(&s);
}

/* The close frame due next: its code, and its reason in why. */
static int ws_closed(int fd, char *why, size_t cap)
{
	char *p;
	size_t n;
	int op = ws_recv(fd, &p, &n);
	CHECK_MSG(op == 8, "opcode %d where a close frame is due", op);
	CHECK_MSG(n >= 2, "a close frame of %zu bytes, with no code", n);
	int code = (unsigned char)p[0] << 8 | (unsigned char)p[1];
	snprintf(why, cap, "%.*s", (int)(n - 2), p + 2);
	free(p);
	return code;
}

/* Nothing follows the close frame: the server has ended the connection
 * (a reset where bytes of ours were left unread). */
static void ws_gone(int fd)
{
	char c;
	ssize_t r = recv(fd, &c, 1, 0);
	CHECK_MSG(r == 0 || (r < 0 && errno == ECONNRESET),
		  "recv gave %zd after the close frame", r);
	close(fd);
}

/* Framing as a client sees it on the wire: fragments, control frames,
 * and the connections the server fails, each with its close code. */
static void test_server_openenv_ws_frames(void)
{
	struct kf_test_serve s;
	const char *const extra[] = {"--openenv-problem", "scale", "--max-body",
				     "1024", NULL};
	kf_test_serve_start(&s, false, extra);
	char why[128], *p;
	size_t n;

	/* A text message in three fragments, a ping between them: the pong
	 * at once with the ping's payload, then the message's answer. */
	int fd = ws_open(s.port);
	ws_frame(fd, 0x01, true, "{\"type\"", 7);
	ws_frame(fd, 0x89, true, "between", 7);
	ws_frame(fd, 0x00, true, ": \"sta", 6);
	ws_frame(fd, 0x80, true, "te\"}", 4);
	CHECK(ws_recv(fd, &p, &n) == 10);
	CHECK(n == 7 && !memcmp(p, "between", 7));
	free(p);
	CHECK(ws_recv(fd, &p, &n) == 1);
	cJSON *j = cJSON_Parse(p);
	CHECK_MSG(j, "not JSON: %.300s", p);
	free(p);
	CHECK_STR(kf_json_str(j, "type"), "state");
	cJSON_Delete(j);

	/* A ping of the most a control frame holds, every byte value in it:
	 * the pong carries the same 125 bytes. */
	char ping[125];
	for (int i = 0; i < 125; i++)
		ping[i] = (char)(i * 2);
	ws_send(fd, 9, ping, sizeof(ping));
	CHECK(ws_recv(fd, &p, &n) == 10);
	CHECK(n == sizeof(ping) && !memcmp(p, ping, sizeof(ping)));
	free(p);

	/* A message of exactly the body cap is answered. */
	char big[1025];
	memset(big, ' ', 1024);
	memcpy(big, "{\"type\": \"state\"}", 17);
	big[1024] = 0;
	j = ws_ask(fd, big);
	CHECK_STR(kf_json_str(j, "type"), "state");
	cJSON_Delete(j);

	/* The client's close frame is answered with one of its code, and the
	 * connection ends. */
	ws_send(fd, 8, "\003\350bye", 5); /* 1000, "bye" */
	CHECK(ws_closed(fd, why, sizeof(why)) == 1000);
	ws_gone(fd);

	/* A client's frame must be masked (RFC 6455 section 5.1): 1002. */
	fd = ws_open(s.port);
	ws_frame(fd, 0x81, false, "{}", 2);
	CHECK(ws_closed(fd, why, sizeof(why)) == 1002);
	ws_gone(fd);

	/* A continuation of no message: 1002. */
	fd = ws_open(s.port);
	ws_frame(fd, 0x80, true, "{}", 2);
	CHECK(ws_closed(fd, why, sizeof(why)) == 1002);
	ws_gone(fd);

	/* A control frame over 125 bytes cannot be parsed: a close frame
	 * with no code. */
	fd = ws_open(s.port);
	memset(big, 'x', 126);
	ws_send(fd, 9, big, 126);
	CHECK(ws_recv(fd, &p, &n) == 8);
	CHECK_MSG(n == 0, "a close frame of %zu bytes", n);
	free(p);
	ws_gone(fd);

	/* A binary message: 1003, OpenEnv's messages are text. */
	fd = ws_open(s.port);
	ws_frame(fd, 0x82, true, "{}", 2);
	CHECK(ws_closed(fd, why, sizeof(why)) == 1003);
	CHECK_CONTAINS(why, "text");
	ws_gone(fd);

	/* Over the cap in one frame: 1009 with the cap in its reason, given
	 * once the frame begins (100 of its 2000 bytes sent). */
	fd = ws_open(s.port);
	memset(big, ' ', 1024);
	ws_frame_part(fd, 0x81, true, 2000, big, 100);
	CHECK(ws_closed(fd, why, sizeof(why)) == 1009);
	CHECK_CONTAINS(why, "body cap of 1024 bytes");
	ws_gone(fd);

	/* Over the cap across fragments: 600 bytes in, then 600 more. */
	fd = ws_open(s.port);
	ws_frame(fd, 0x01, true, big, 600);
	ws_frame_part(fd, 0x00, true, 600, big, 100);
	CHECK(ws_closed(fd, why, sizeof(why)) == 1009);
	CHECK_CONTAINS(why, "body cap");
	ws_gone(fd);

	/* The server is still well. */
	CHECK(http(s.port, "GET", "/v1/health", NULL, &j) == 200);
	cJSON_Delete(j);
	kf_test_serve_stop(&s);
}

/* OpenEnv's own client (openenv-core), where it is installed. */
/* The status of an observation's item (metadata.item.status, or
 * metadata.status), and its reason. */
static const char *obs_item(const cJSON *obs, const char *key)
{
	const cJSON *m = cJSON_GetObjectItem(obs, "metadata");
	const char *v = kf_json_str(cJSON_GetObjectItem(m, "item"), key);
	return v ? v : kf_json_str(m, key);
}

/* A completion or code holding \u0000 is that step's failure
 * (compile_error, nul_in_completion, the turn counted) on /step and /ws,
 * as on the episode's own route; a NUL elsewhere refuses the request. A
 * lone surrogate escape is read as U+FFFD, not a malformed body (a blind
 * round found both voided the step). */
static void test_server_openenv_nul_and_lone_surrogate_fail_the_step(void)
{
	struct kf_test_serve s;
	start(&s);
	cJSON *j;
	CHECK(http(s.port, "POST", "/step",
		   "{\"action\": {\"completion\": \"```c\\nint x;\\n```"
		   "\\u0000```c\\nint y;```\"}}",
		   &j) == 200);
	const cJSON *obs = cJSON_GetObjectItem(j, "observation");
	CHECK_STR(obs_item(obs, "status"), "compile_error");
	CHECK_CONTAINS(obs_item(obs, "reason"), "NUL");
	CHECK(kf_json_num(j, "reward", 0) == -4);
	cJSON_Delete(j);
	CHECK(http(s.port, "POST", "/step",
		   "{\"action\": {\"code\": \"int x;\\u0000\"}}", &j) == 200);
	CHECK_STR(obs_item(cJSON_GetObjectItem(j, "observation"), "status"),
		  "compile_error");
	cJSON_Delete(j);
	/* Anywhere else it is refused. */
	CHECK(http(s.port, "POST", "/step",
		   "{\"action\": {\"code\": \"x\", \"problem_id\": "
		   "\"sc\\u0000ale\"}}",
		   &j) == 400);
	CHECK_STR(kf_json_str(cJSON_GetObjectItem(j, "error"), "code"),
		  "nul_in_string");
	cJSON_Delete(j);
	/* A lone surrogate: the step is scored, the body not refused. */
	CHECK(http(s.port, "POST", "/step",
		   "{\"action\": {\"completion\": \"no code \\ud800 here\"}}",
		   &j) == 200);
	obs = cJSON_GetObjectItem(j, "observation");
	CHECK_STR(obs_item(obs, "status"), "compile_error");
	CHECK(kf_json_num(j, "reward", 0) == -4);
	cJSON_Delete(j);

	/* /ws: the turn is counted, the session goes on. */
	int fd = ws_open(s.port);
	j = ws_ask(fd, "{\"type\": \"reset\", \"data\": {\"problem_id\": "
		       "\"scale\", \"max_turns\": 4}}");
	CHECK_STR(kf_json_str(j, "type"), "observation");
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"step\", \"data\": {\"completion\": "
		       "\"```c\\nint x;```\\u0000\"}}");
	CHECK_STR(kf_json_str(j, "type"), "observation");
	obs = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "data"), "observation");
	CHECK_STR(obs_item(obs, "status"), "compile_error");
	CHECK_CONTAINS(obs_item(obs, "reason"), "NUL");
	CHECK(kf_json_num(obs, "turn", 0) == 1);
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"step\", \"data\": {\"completion\": "
		       "\"\\udc00 and nothing\"}}");
	CHECK_STR(kf_json_str(j, "type"), "observation");
	obs = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "data"), "observation");
	CHECK(kf_json_num(obs, "turn", 0) == 2);
	cJSON_Delete(j);
	/* A NUL in a message's other string: an error, no turn. */
	j = ws_ask(fd, "{\"type\": \"st\\u0000ep\", \"data\": {}}");
	CHECK_STR(kf_json_str(j, "type"), "error");
	CHECK_CONTAINS(kf_json_str(cJSON_GetObjectItem(j, "data"), "message"),
		       "not a step's completion or code");
	cJSON_Delete(j);
	j = ws_ask(fd, "{\"type\": \"state\"}");
	const cJSON *d = cJSON_GetObjectItem(j, "data");
	CHECK(kf_json_num(d, "step_count", 0) == 2);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(d, "rewards")) == 2);
	cJSON_Delete(j);
	close(fd);
	kf_test_serve_stop(&s);
}

static void test_server_openenv_client(void)
{
	const char *env = getenv("KFORGE_OPENENV_PYTHON");
	char *py = env && *env ? kf_xstrdup(env) : kf_which("python3");
	if (!py)
		SKIP("python3 is not installed");
	struct kf_test_serve s;
	start(&s);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", s.port);
	char *argv[] = {py, "integrations/openenv/check_client.py", url,
			"tests/fixtures/scale/candidates/sum.c", NULL};
	struct kf_strbuf out = KF_STRBUF_INIT;
	int st = 0;
	struct kf_err err = KF_ERR_INIT;
	CHECK(!kf_proc_run(argv, 120000, 1 << 20, &out, &st, &err));
	kf_test_serve_stop(&s);
	free(py);
	const char *o = kf_strbuf_str(&out);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", o);
	if (!strncmp(o, "SKIP", 4))
		SKIP("%.*s", (int)strcspn(o + 5, "\n"), o + 5);
	CHECK_CONTAINS(o, "OK openenv client");
	kf_strbuf_release(&out);
}

KF_TESTS(server_openenv) = {
    KF_TEST(test_server_openenv_accept_key),
    KF_TEST(test_server_openenv_gpu_info_line),
    KF_TEST(test_server_openenv_http),
    KF_TEST(test_server_openenv_websocket),
    KF_TEST(test_server_openenv_ws_frames),
    KF_TEST(test_server_openenv_nul_and_lone_surrogate_fail_the_step),
    KF_TEST(test_server_openenv_client),
    KF_TESTS_END,
};
