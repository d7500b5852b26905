/*
 * chat_server.h: the scripted chat-completions server (tests/llm_server.py)
 * as the llm and search tests start it: on 127.0.0.1, on a port it picks,
 * recording every request it gets.
 */
#ifndef KFORGE_TESTS_CHAT_SERVER_H
#define KFORGE_TESTS_CHAT_SERVER_H

#include <kforge/base.h>

struct kf_test_chat_server {
	struct kf_proc proc;
	char url[64]; /* "http://127.0.0.1:<port>/v1" */
	char *log;    /* its JSON-lines record of requests (owned) */
};

/* Starts the server on script (JSON text), ending by itself after
 * timeout_s; skips the case when python3 is absent. */
void kf_test_chat_server_start(struct kf_test_chat_server *s,
			       const char *script, int timeout_s);
/* Stops it and frees what start allocated. */
void kf_test_chat_server_stop(struct kf_test_chat_server *s);

#endif
