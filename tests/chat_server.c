/*
 * chat_server.c: starts and stops tests/llm_server.py for the tests that
 * talk to a chat-completions server (llm_test.c, search_test.c).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_server.h"
#include "harness.h"

void kf_test_chat_server_start(struct kf_test_chat_server *s,
			       const char *script, int timeout_s)
{
	struct kf_err err = KF_ERR_INIT;
	struct kf_proc init = KF_PROC_INIT;
	char *py = kf_which("python3");
	if (!py)
		SKIP("python3 is not installed: no scripted LLM server");
	char *path = kf_path_join(kf_test_tmpdir(), "script.json");
	char timeout[16];
	snprintf(timeout, sizeof(timeout), "%d", timeout_s);
	s->log = kf_path_join(kf_test_tmpdir(), "requests.jsonl");
	CHECK(kf_file_write_atomic(path, script, strlen(script), &err) == 0);
	char *argv[] = {py,	"tests/llm_server.py", path,	"--log",
			s->log, "--timeout",	       timeout, NULL};
	s->proc = init;
	CHECK_MSG(kf_proc_spawn(&s->proc, argv, NULL, 2, &err) == 0, "%s",
		  err.msg);
	char line[32] = "";
	size_t n = 0;
	while (n < sizeof(line) - 1) {
		struct pollfd pfd = {s->proc.from_child, POLLIN, 0};
		CHECK_MSG(poll(&pfd, 1, 10000) == 1,
			  "the server printed no port");
		ssize_t r = read(s->proc.from_child, line + n, 1);
		CHECK_MSG(r == 1, "the server exited before printing its port");
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	int port = atoi(line);
	CHECK_MSG(port > 0 && port < 65536, "bad port line \"%s\"", line);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d/v1", port);
	free(path);
	free(py);
}

void kf_test_chat_server_stop(struct kf_test_chat_server *s)
{
	int status = 0;
	kf_proc_kill(&s->proc, &status);
	free(s->log);
	s->log = NULL;
}
