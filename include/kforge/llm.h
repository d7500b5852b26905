/*
 * llm.h: the LLM policy's client for OpenAI-compatible chat-completions
 * servers (vLLM, SGLang, llama.cpp, Ollama, hosted APIs), on libcurl.
 */
#ifndef KFORGE_LLM_H
#define KFORGE_LLM_H

#include <stdbool.h>
#include <stddef.h>

#include <kforge/base.h>

/* The most completions one call may ask for (samples). */
#define KF_LLM_MAX_SAMPLES 64
/* The largest response body one may allow (max_response_bytes). */
#define KF_LLM_RESPONSE_CAP_MAX ((size_t)256 << 20)

/*
 * Settings of the client, applied in this order, a later one winning:
 * defaults and the environment (kf_llm_config_init), a config file
 * (kf_llm_config_file), flags (kf_llm_config_set). Strings are owned by the
 * config (the setters copy) and freed by kf_llm_config_release.
 */
struct kf_llm_config {
	/* Up to and including the API version, without "/chat/completions":
	 * "http://127.0.0.1:8000/v1". */
	char *base_url;
	/* The model name the server knows; NULL: none set (kf_llm_chat
	 * refuses). */
	char *model;
	/* Sent as "Authorization: Bearer ..."; NULL: no Authorization header
	 * at all. Never printed. */
	char *api_key;
	double temperature;	/* sampling temperature, [0, 2]; NAN: not
				   sent (models that take only their own) */
	int samples;		/* completions per call ("n"), 1 to 64 */
	int max_tokens;		/* per completion; 0: not sent (the server's
				   default) */
	int timeout_ms;		/* one attempt, connecting to the last byte */
	int connect_timeout_ms; /* connecting, within timeout_ms */
	int retries;		/* attempts after the first, 0 to 20 */
	/* The wait before the first retry, doubled each retry; a Retry-After
	 * header, when longer, replaces it; at most 60 s. */
	int backoff_ms;
	size_t max_response_bytes; /* a longer body aborts the transfer */
	/* The name the completion's budget goes by: false "max_tokens",
	 * true "max_completion_tokens" (OpenAI's o-series and gpt-5 take
	 * only that; vLLM takes either). */
	bool max_completion_tokens;
	/* Follow-up requests per completion cut at max tokens
	 * (finish_reason "length"), 0 to 8: each sends the conversation, the
	 * cut text as the assistant's and a request to go on, and appends
	 * the answer. */
	int continuations;
};

/*
 * Fills cfg with the defaults, then with the environment:
 *   KFORGE_LLM_BASE_URL, else OPENAI_BASE_URL   (default
 *                                  "http://127.0.0.1:8000/v1")
 *   KFORGE_LLM_MODEL                (default: none)
 *   KFORGE_LLM_API_KEY, else OPENAI_API_KEY     (default: none)
 *   KFORGE_LLM_TEMPERATURE (0.7), KFORGE_LLM_SAMPLES (1),
 *   KFORGE_LLM_MAX_TOKENS (8192), KFORGE_LLM_TIMEOUT_MS (600000),
 *   KFORGE_LLM_CONNECT_TIMEOUT_MS (10000), KFORGE_LLM_RETRIES (4),
 *   KFORGE_LLM_BACKOFF_MS (1000), KFORGE_LLM_MAX_RESPONSE_BYTES (8 MiB),
 *   KFORGE_LLM_MAX_TOKENS_FIELD (max_tokens), KFORGE_LLM_CONTINUATIONS (1).
 * Empty variables are ignored. Returns 0, or KF_EINVAL with err naming the
 * variable and why when a value is malformed or out of range (cfg then
 * holds the defaults and the variables before it; release it either way).
 */
int kf_llm_config_init(struct kf_llm_config *cfg, struct kf_err *err);

/*
 * Sets one setting from text (a command-line flag). key is one of the
 * field names above, or "api_key_env": the name of an environment variable
 * that holds the key (so that keys stay out of files and command lines).
 * temperature also takes "none" (not sent); max_tokens_field takes
 * "max_tokens" or "max_completion_tokens".
 * Returns 0, or KF_EINVAL naming the key and why (unknown key, a number
 * that does not parse or is out of range, an unset api_key_env variable);
 * cfg is unchanged then.
 */
int kf_llm_config_set(struct kf_llm_config *cfg, const char *key,
		      const char *value, struct kf_err *err);

/*
 * Applies a JSON config file: one object whose keys are those of
 * kf_llm_config_set, strings for strings, numbers for numbers (at most
 * 64 KiB). An unknown key, a wrong type or a bad value is KF_EINVAL naming
 * the file and the key; a missing file is KF_ENOENT. All or nothing: cfg
 * is unchanged on error.
 */
int kf_llm_config_file(struct kf_llm_config *cfg, const char *path,
		       struct kf_err *err);

/* Frees the strings; cfg may be re-initialised. NULL is a no-op. */
void kf_llm_config_release(struct kf_llm_config *cfg);

/* One chat message; both strings are borrowed for the call. */
struct kf_llm_msg {
	const char *role; /* "system", "user" or "assistant" */
	const char *content;
};

/*
 * What one call brought back. Owned by the caller, released with
 * kf_llm_reply_release. The counters are filled on failure too.
 */
struct kf_llm_reply {
	int n;		       /* completions received; may be fewer than
				  samples when the server ignores "n" */
	char **texts;	       /* n strings, each NUL-terminated, with
				  control bytes and invalid UTF-8 replaced by
				  '?'; "" for a choice without content */
	char **finish_reasons; /* n strings ("stop", "length", ...); "" when
				  the server gave none */
	char *model;	       /* the model the server says answered; NULL
				  when it did not say */
	long prompt_tokens;    /* from "usage"; -1 when not reported */
	long completion_tokens;
	double latency_ms; /* the last attempt, request to last byte */
	int attempts;	   /* requests sent, retries included */
	int http_status;   /* of the last attempt; 0 when no response */
	int max_tokens;	   /* the budget the last request asked for (lowered
			      to fit the model's context, see below); 0 when
			      none was sent */
	int continued;	   /* continuation requests sent */
};
#define KF_LLM_REPLY_INIT                                                      \
	{                                                                      \
		0, NULL, NULL, NULL, -1, -1, 0.0, 0, 0, 0, 0                   \
	}

/*
 * Sends msgs[0..n_msgs) to {base_url}/chat/completions with the model,
 * temperature, n (samples) and max_tokens of cfg, and parses
 * choices[].message.content, finish_reason and usage into *reply (which
 * must be released, or be KF_LLM_REPLY_INIT, before the call).
 *
 * A 429 (after its Retry-After), a 5xx, a timeout or a connection failure
 * is retried up to cfg->retries times with exponential backoff. A 400 that
 * says the prompt and max tokens exceed the model's context (vLLM: "This
 * model's maximum context length is L tokens and your request has P input
 * tokens") is sent again at once with max tokens L - P, at most twice per
 * call. A completion cut at max tokens is continued cfg->continuations
 * times (its finish reason is then the last part's). Returns 0
 * with reply->n >= 1, or, with err naming the URL, the HTTP status when
 * there was one, and why (never the API key):
 *   KF_EINVAL    bad settings or arguments (no model, no messages);
 *   KF_ETIMEDOUT the last attempt timed out;
 *   KF_EIO       the last attempt could not connect, or the server
 *                answered an error status (its message quoted, capped);
 *   KF_ERANGE    the body passed max_response_bytes (the transfer is
 *                aborted; not retried);
 *   KF_EPROTO    a success status whose body is not a chat completion
 *                (malformed JSON, no choices; not retried).
 * Safe to call from several threads with distinct replies.
 */
int kf_llm_chat(const struct kf_llm_config *cfg, const struct kf_llm_msg *msgs,
		int n_msgs, struct kf_llm_reply *reply, struct kf_err *err);

/* Frees what the reply owns and resets it to KF_LLM_REPLY_INIT. */
void kf_llm_reply_release(struct kf_llm_reply *reply);

#endif
