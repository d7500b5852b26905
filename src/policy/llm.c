/*
 * llm.c: the OpenAI-compatible chat-completions client of the LLM policy,
 * on libcurl: settings, one request per attempt with a capped body, retries
 * with backoff, and parsing of choices and usage.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include <kforge/llm.h>

#define CONFIG_FILE_CAP ((size_t)64 << 10)
#define URL_CAP 2048
#define MODEL_CAP 256
#define KEY_CAP 4096
#define BACKOFF_CAP_MS 60000
#define ERROR_QUOTE_CAP 300 /* bytes of a server's error message quoted */

/* KEY_NUM_OR_NONE: a number, or the string "none" in a file. */
enum key_type { KEY_STR, KEY_NUM, KEY_NUM_OR_NONE };
#define MAX_CONTINUATIONS 8
#define CONTEXT_FITS 2 /* budget lowerings per call (see kf_llm_chat) */

struct key_def {
	const char *name;
	enum key_type type;
};

static const struct key_def keys[] = {
    {"base_url", KEY_STR},
    {"model", KEY_STR},
    {"api_key", KEY_STR},
    {"api_key_env", KEY_STR},
    {"temperature", KEY_NUM_OR_NONE},
    {"samples", KEY_NUM},
    {"max_tokens", KEY_NUM},
    {"timeout_ms", KEY_NUM},
    {"connect_timeout_ms", KEY_NUM},
    {"retries", KEY_NUM},
    {"backoff_ms", KEY_NUM},
    {"max_response_bytes", KEY_NUM},
    {"max_tokens_field", KEY_STR},
    {"continuations", KEY_NUM},
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const struct key_def *find_key(const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* Parses a whole decimal integer within [lo, hi]. */
static int parse_int(const char *key, const char *v, long long lo, long long hi,
		     long long *out, struct kf_err *err)
{
	char *end = NULL;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (!*v || errno || *end)
		return kf_err_set(err, KF_EINVAL,
				  "%s: \"%.40s\" is not an "
				  "integer",
				  key, v);
	if (x < lo || x > hi)
		return kf_err_set(err, KF_EINVAL,
				  "%s: %lld is outside [%lld, %lld]", key, x,
				  lo, hi);
	*out = x;
	return 0;
}

/* A string setting: no control bytes (it may become a header), capped. */
static int check_str(const char *key, const char *v, size_t cap,
		     struct kf_err *err)
{
	size_t n = strnlen(v, cap + 1);
	if (n == 0)
		return kf_err_set(err, KF_EINVAL, "%s: empty", key);
	if (n > cap)
		return kf_err_set(err, KF_EINVAL, "%s: longer than %zu bytes",
				  key, cap);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return kf_err_set(err, KF_EINVAL,
					  "%s: holds a control character", key);
	return 0;
}

static void replace(char **slot, const char *v)
{
	free(*slot);
	*slot = kf_xstrdup(v);
}

int kf_llm_config_set(struct kf_llm_config *cfg, const char *key,
		      const char *value, struct kf_err *err)
{
	long long x = 0;
	int rc = 0;
	if (!key || !find_key(key))
		return kf_err_set(err, KF_EINVAL,
				  "unknown LLM setting \"%.64s\""
				  " (known: base_url, model, api_key, "
				  "api_key_env, temperature, samples, "
				  "max_tokens, timeout_ms, connect_timeout_ms, "
				  "retries, backoff_ms, max_response_bytes, "
				  "max_tokens_field, continuations)",
				  key ? key : "");
	if (!value)
		return kf_err_set(err, KF_EINVAL, "%s: no value", key);
	if (strcmp(key, "base_url") == 0) {
		if ((rc = check_str(key, value, URL_CAP, err)))
			return rc;
		if (strncmp(value, "http://", 7) != 0 &&
		    strncmp(value, "https://", 8) != 0)
			return kf_err_set(err, KF_EINVAL,
					  "base_url: \"%.200s\" does not start "
					  "with http:// or https://",
					  value);
		replace(&cfg->base_url, value);
	} else if (strcmp(key, "model") == 0) {
		if ((rc = check_str(key, value, MODEL_CAP, err)))
			return rc;
		replace(&cfg->model, value);
	} else if (strcmp(key, "api_key") == 0) {
		/* The message must not quote the key. */
		if ((rc = check_str(key, value, KEY_CAP, err)))
			return rc;
		replace(&cfg->api_key, value);
	} else if (strcmp(key, "api_key_env") == 0) {
		if ((rc = check_str(key, value, MODEL_CAP, err)))
			return rc;
		const char *k = getenv(value);
		if (!k || !*k)
			return kf_err_set(err, KF_EINVAL,
					  "api_key_env: the environment "
					  "variable %.64s is not set",
					  value);
		if ((rc = check_str(value, k, KEY_CAP, err)))
			return rc;
		replace(&cfg->api_key, k);
	} else if (strcmp(key, "temperature") == 0 &&
		   strcmp(value, "none") == 0) {
		cfg->temperature = NAN;
	} else if (strcmp(key, "temperature") == 0) {
		char *end = NULL;
		errno = 0;
		double t = strtod(value, &end);
		if (!*value || errno || *end || !isfinite(t))
			return kf_err_set(err, KF_EINVAL,
					  "temperature: \"%.40s\" is not a "
					  "number (or \"none\": not sent)",
					  value);
		if (t < 0 || t > 2)
			return kf_err_set(err, KF_EINVAL,
					  "temperature: %g is outside [0, 2]",
					  t);
		cfg->temperature = t;
	} else if (strcmp(key, "samples") == 0) {
		if ((rc =
			 parse_int(key, value, 1, KF_LLM_MAX_SAMPLES, &x, err)))
			return rc;
		cfg->samples = (int)x;
	} else if (strcmp(key, "max_tokens") == 0) {
		if ((rc = parse_int(key, value, 0, 10000000, &x, err)))
			return rc;
		cfg->max_tokens = (int)x;
	} else if (strcmp(key, "timeout_ms") == 0) {
		if ((rc = parse_int(key, value, 1, 86400000, &x, err)))
			return rc;
		cfg->timeout_ms = (int)x;
	} else if (strcmp(key, "connect_timeout_ms") == 0) {
		if ((rc = parse_int(key, value, 1, 3600000, &x, err)))
			return rc;
		cfg->connect_timeout_ms = (int)x;
	} else if (strcmp(key, "retries") == 0) {
		if ((rc = parse_int(key, value, 0, 20, &x, err)))
			return rc;
		cfg->retries = (int)x;
	} else if (strcmp(key, "backoff_ms") == 0) {
		if ((rc = parse_int(key, value, 0, BACKOFF_CAP_MS, &x, err)))
			return rc;
		cfg->backoff_ms = (int)x;
	} else if (strcmp(key, "max_tokens_field") == 0) {
		if (strcmp(value, "max_tokens") &&
		    strcmp(value, "max_completion_tokens"))
			return kf_err_set(err, KF_EINVAL,
					  "max_tokens_field: \"%.40s\" is "
					  "neither max_tokens nor "
					  "max_completion_tokens",
					  value);
		cfg->max_completion_tokens =
		    strcmp(value, "max_completion_tokens") == 0;
	} else if (strcmp(key, "continuations") == 0) {
		if ((rc = parse_int(key, value, 0, MAX_CONTINUATIONS, &x, err)))
			return rc;
		cfg->continuations = (int)x;
	} else {
		if ((rc = parse_int(key, value, 1024,
				    (long long)KF_LLM_RESPONSE_CAP_MAX, &x,
				    err)))
			return rc;
		cfg->max_response_bytes = (size_t)x;
	}
	return 0;
}

int kf_llm_config_init(struct kf_llm_config *cfg, struct kf_err *err)
{
	/* Variables in the order applied: a later one wins. */
	static const struct {
		const char *var, *key;
	} env[] = {
	    {"OPENAI_BASE_URL", "base_url"},
	    {"KFORGE_LLM_BASE_URL", "base_url"},
	    {"KFORGE_LLM_MODEL", "model"},
	    {"OPENAI_API_KEY", "api_key"},
	    {"KFORGE_LLM_API_KEY", "api_key"},
	    {"KFORGE_LLM_TEMPERATURE", "temperature"},
	    {"KFORGE_LLM_SAMPLES", "samples"},
	    {"KFORGE_LLM_MAX_TOKENS", "max_tokens"},
	    {"KFORGE_LLM_TIMEOUT_MS", "timeout_ms"},
	    {"KFORGE_LLM_CONNECT_TIMEOUT_MS", "connect_timeout_ms"},
	    {"KFORGE_LLM_RETRIES", "retries"},
	    {"KFORGE_LLM_BACKOFF_MS", "backoff_ms"},
	    {"KFORGE_LLM_MAX_RESPONSE_BYTES", "max_response_bytes"},
	    {"KFORGE_LLM_MAX_TOKENS_FIELD", "max_tokens_field"},
	    {"KFORGE_LLM_CONTINUATIONS", "continuations"},
	};
	memset(cfg, 0, sizeof(*cfg));
	cfg->base_url = kf_xstrdup("http://127.0.0.1:8000/v1");
	cfg->temperature = 0.7;
	cfg->samples = 1;
	cfg->max_tokens = 8192;
	cfg->timeout_ms = 600000;
	cfg->connect_timeout_ms = 10000;
	cfg->retries = 4;
	cfg->backoff_ms = 1000;
	cfg->max_response_bytes = (size_t)8 << 20;
	cfg->continuations = 1;
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
		const char *v = getenv(env[i].var);
		if (!v || !*v)
			continue;
		int rc = kf_llm_config_set(cfg, env[i].key, v, err);
		if (rc) {
			kf_err_prefix(err, "environment variable %s",
				      env[i].var);
			return rc;
		}
	}
	return 0;
}

static void config_copy(struct kf_llm_config *dst,
			const struct kf_llm_config *src)
{
	*dst = *src;
	dst->base_url = src->base_url ? kf_xstrdup(src->base_url) : NULL;
	dst->model = src->model ? kf_xstrdup(src->model) : NULL;
	dst->api_key = src->api_key ? kf_xstrdup(src->api_key) : NULL;
}

void kf_llm_config_release(struct kf_llm_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->base_url);
	free(cfg->model);
	if (cfg->api_key) /* do not leave the key in freed memory */
		memset(cfg->api_key, 0, strlen(cfg->api_key));
	free(cfg->api_key);
	cfg->base_url = cfg->model = cfg->api_key = NULL;
}

int kf_llm_config_file(struct kf_llm_config *cfg, const char *path,
		       struct kf_err *err)
{
	char *text = NULL;
	size_t bytes = 0;
	cJSON *root = NULL;
	struct kf_llm_config tmp;
	int rc = kf_file_read(path, CONFIG_FILE_CAP, &text, &bytes, err);
	if (rc)
		return rc;
	config_copy(&tmp, cfg);
	root = cJSON_ParseWithLength(text, bytes);
	if (!cJSON_IsObject(root)) {
		rc = kf_err_set(err, KF_EINVAL,
				"%s: not a JSON object of LLM settings", path);
		goto out;
	}
	for (const cJSON *it = root->child; it; it = it->next) {
		const struct key_def *k = find_key(it->string);
		const char *why = NULL;
		if (!k)
			why = "unknown key";
		for (const cJSON *p = root->child; !why && p != it; p = p->next)
			if (strcmp(p->string, it->string) == 0)
				why = "given twice";
		if (!why && k->type == KEY_STR && !cJSON_IsString(it))
			why = "must be a string";
		if (!why && k->type == KEY_NUM && !cJSON_IsNumber(it))
			why = "must be a number";
		if (!why && k->type == KEY_NUM_OR_NONE && !cJSON_IsNumber(it) &&
		    !(cJSON_IsString(it) && !strcmp(it->valuestring, "none")))
			why = "must be a number or \"none\"";
		if (why) {
			rc = kf_err_set(err, KF_EINVAL, "%s: key \"%.64s\": %s",
					path, it->string, why);
			goto out;
		}
		if (k->type != KEY_NUM && cJSON_IsString(it)) {
			rc = kf_llm_config_set(&tmp, k->name, it->valuestring,
					       err);
		} else {
			char num[64];
			snprintf(num, sizeof(num), "%.17g", it->valuedouble);
			rc = kf_llm_config_set(&tmp, k->name, num, err);
		}
		if (rc) {
			/* The setter's message starts with the key. */
			kf_err_prefix(err, "%s", path);
			goto out;
		}
	}
	kf_llm_config_release(cfg);
	*cfg = tmp;
	memset(&tmp, 0, sizeof(tmp));
out:
	kf_llm_config_release(&tmp);
	cJSON_Delete(root);
	free(text);
	return rc;
}

/* libcurl's global state is set up once per process. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* One attempt's response, filled by libcurl's callbacks. */
struct body {
	struct kf_strbuf sb;
	size_t cap_bytes;
	int over_cap;	     /* the body passed cap_bytes: transfer aborted */
	long retry_after_ms; /* from a Retry-After header; -1 when none */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb;
	if (n > b->cap_bytes - b->sb.len) {
		b->over_cap = 1;
		return 0; /* makes libcurl stop with CURLE_WRITE_ERROR */
	}
	kf_strbuf_add(&b->sb, data, n);
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb;
	static const char name[] = "retry-after:";
	if (n > sizeof(name) - 1 && n < 128 &&
	    strncasecmp(data, name, sizeof(name) - 1) == 0) {
		char v[128];
		memcpy(v, data + sizeof(name) - 1, n - (sizeof(name) - 1));
		v[n - (sizeof(name) - 1)] = 0;
		/* Seconds only; an HTTP date falls back to the backoff. */
		char *end = NULL;
		double s = strtod(v, &end);
		while (end && (*end == ' ' || *end == '\r' || *end == '\n'))
			end++;
		if (end && end != v && !*end && s >= 0 && s < 86400)
			b->retry_after_ms = (long)(s * 1000.0);
	}
	/* A new response (after a 100 Continue) starts without the header. */
	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0)
		b->retry_after_ms = -1;
	return n;
}

static char *chat_url(const char *base)
{
	size_t n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	return kf_xasprintf("%.*s/chat/completions", (int)n, base);
}

/* The name the completion's budget is sent under. */
static const char *budget_name(const struct kf_llm_config *cfg)
{
	return cfg->max_completion_tokens ? "max_completion_tokens"
					  : "max_tokens";
}

static char *request_body(const struct kf_llm_config *cfg,
			  const struct kf_llm_msg *msgs, int n_msgs,
			  int samples, int max_tokens)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "model", cfg->model);
	cJSON *arr = cJSON_AddArrayToObject(root, "messages");
	for (int i = 0; i < n_msgs; i++) {
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "role", msgs[i].role);
		cJSON_AddStringToObject(m, "content", msgs[i].content);
		cJSON_AddItemToArray(arr, m);
	}
	if (!isnan(cfg->temperature))
		cJSON_AddNumberToObject(root, "temperature", cfg->temperature);
	cJSON_AddNumberToObject(root, "n", samples);
	if (max_tokens > 0)
		cJSON_AddNumberToObject(root, budget_name(cfg), max_tokens);
	cJSON_AddFalseToObject(root, "stream");
	char *s = kf_json_print(root);
	cJSON_Delete(root);
	return s;
}

/*
 * From a 400's message: the model's context (*limit) and the prompt's
 * tokens (*prompt), when it says that the prompt and the completion's
 * budget do not fit together. vLLM's words (its input validation):
 * "'max_tokens' or 'max_completion_tokens' is too large: M. This model's
 * maximum context length is L tokens and your request has P input tokens
 * (M > L - P)."; before that: "This model's maximum context length is L
 * tokens. However, you requested T tokens (P in the messages, M in the
 * completion)." A prompt longer than the context by itself ("However, your
 * request has P input tokens. Please reduce the length of the input
 * messages.") is not one: no budget fits it.
 */
static bool context_limit(const char *msg, long *limit, long *prompt)
{
	static const char at[] = "maximum context length is ";
	const char *a = strstr(msg, at);
	if (!a)
		return false;
	*limit = strtol(a + strlen(at), NULL, 10);
	const char *b = strstr(a, "your request has ");
	if (b &&
	    (strstr(msg, "max_tokens") || strstr(msg, "max_completion_tokens")))
		*prompt = strtol(b + strlen("your request has "), NULL, 10);
	else if ((b = strstr(a, "tokens (")) && strstr(b, " in the messages"))
		*prompt = strtol(b + strlen("tokens ("), NULL, 10);
	else
		return false;
	return *limit > 0 && *prompt > 0 && *prompt < *limit;
}

/* A short, safe quote of what an error body says. */
static void quote_error(const char *body, size_t bytes, char *out,
			size_t out_bytes)
{
	cJSON *j = cJSON_ParseWithLength(body, bytes);
	const char *msg = NULL;
	if (j) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
		if (cJSON_IsString(e))
			msg = e->valuestring;
		else if (cJSON_IsObject(e))
			msg = kf_json_str(e, "message");
		if (!msg)
			msg = kf_json_str(j, "detail");
		if (!msg)
			msg = kf_json_str(j, "message");
	}
	if (!msg)
		msg = body;
	snprintf(out, out_bytes, "%.*s", ERROR_QUOTE_CAP, msg);
	/* Newlines would break the one-line message. */
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	kf_text_sanitize(out);
	cJSON_Delete(j);
}

/* A text from the server, made safe: CRLF to LF, then sanitized. */
static char *clean_text(const char *s)
{
	char *t = kf_xstrdup(s);
	char *w = t;
	for (const char *r = t; *r; r++)
		if (!(r[0] == '\r' && r[1] == '\n'))
			*w++ = *r;
	*w = 0;
	kf_text_sanitize(t);
	return t;
}

static int parse_reply(const char *url, const char *body, size_t bytes,
		       struct kf_llm_reply *reply, struct kf_err *err)
{
	int rc = 0;
	cJSON *j = cJSON_ParseWithLength(body, bytes);
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(j, "choices");
	if (!cJSON_IsObject(j)) {
		rc = kf_err_set(err, KF_EPROTO,
				"%s: HTTP %d: the body is not JSON (%zu bytes)",
				url, reply->http_status, bytes);
		goto out;
	}
	int n = cJSON_GetArraySize(choices);
	if (!cJSON_IsArray(choices) || n < 1) {
		rc = kf_err_set(err, KF_EPROTO,
				"%s: HTTP %d: the reply has no choices", url,
				reply->http_status);
		goto out;
	}
	if (n > KF_LLM_MAX_SAMPLES)
		n = KF_LLM_MAX_SAMPLES;
	reply->texts = kf_xcalloc((size_t)n, sizeof(char *));
	reply->finish_reasons = kf_xcalloc((size_t)n, sizeof(char *));
	int i = 0;
	for (const cJSON *c = choices->child; c && i < n; c = c->next) {
		const cJSON *msg =
		    cJSON_GetObjectItemCaseSensitive(c, "message");
		const cJSON *content =
		    cJSON_GetObjectItemCaseSensitive(msg, "content");
		if (!cJSON_IsObject(c) || !cJSON_IsObject(msg) ||
		    (!cJSON_IsString(content) && !cJSON_IsNull(content) &&
		     content)) {
			rc = kf_err_set(err, KF_EPROTO,
					"%s: HTTP %d: choice %d has no "
					"message content",
					url, reply->http_status, i);
			goto out;
		}
		const char *fin = kf_json_str(c, "finish_reason");
		reply->texts[i] = clean_text(
		    cJSON_IsString(content) ? content->valuestring : "");
		reply->finish_reasons[i] = clean_text(fin ? fin : "");
		reply->n = ++i;
	}
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(j, "usage");
	reply->prompt_tokens = (long)kf_json_num(usage, "prompt_tokens", -1);
	reply->completion_tokens =
	    (long)kf_json_num(usage, "completion_tokens", -1);
	const char *model = kf_json_str(j, "model");
	if (model)
		reply->model = clean_text(model);
out:
	cJSON_Delete(j);
	return rc;
}

/* How one attempt ended. */
enum attempt_end {
	END_OK,	   /* a 2xx with a body */
	END_RETRY, /* worth another attempt */
	END_FAIL,  /* final */
};

static enum attempt_end attempt(CURL *h, const char *url, struct body *b,
				struct kf_llm_reply *reply, int *rc,
				struct kf_err *err)
{
	char curl_msg[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_msg);
	uint64_t t0 = kf_now_ns();
	CURLcode cc = curl_easy_perform(h);
	reply->latency_ms = (double)(kf_now_ns() - t0) / 1e6;
	reply->attempts++;
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	reply->http_status = (int)status;
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	if (b->over_cap || cc == CURLE_FILESIZE_EXCEEDED) {
		*rc = kf_err_set(err, KF_ERANGE,
				 "%s: HTTP %ld: the reply is longer than "
				 "max_response_bytes (%zu); transfer aborted",
				 url, status, b->cap_bytes);
		return END_FAIL;
	}
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		*rc =
		    kf_err_set(err, KF_ETIMEDOUT,
			       "%s: no complete reply within %.0f ms (%s)", url,
			       reply->latency_ms,
			       curl_msg[0] ? curl_msg : curl_easy_strerror(cc));
		return END_RETRY;
	}
	if (cc != CURLE_OK) {
		*rc =
		    kf_err_set(err, KF_EIO, "%s: %s", url,
			       curl_msg[0] ? curl_msg : curl_easy_strerror(cc));
		switch (cc) {
		case CURLE_COULDNT_CONNECT:
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_RESOLVE_PROXY:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
		case CURLE_GOT_NOTHING:
		case CURLE_PARTIAL_FILE:
		case CURLE_SSL_CONNECT_ERROR:
			return END_RETRY;
		default:
			return END_FAIL;
		}
	}
	if (status < 200 || status > 299) {
		char quote[ERROR_QUOTE_CAP + 8];
		quote_error(kf_strbuf_str(&b->sb), b->sb.len, quote,
			    sizeof(quote));
		*rc = kf_err_set(err, KF_EIO, "%s: HTTP %ld: %s", url, status,
				 quote[0] ? quote : "(empty body)");
		if (status == 429 || status == 408 || status >= 500)
			return END_RETRY;
		return END_FAIL;
	}
	*rc = parse_reply(url, kf_strbuf_str(&b->sb), b->sb.len, reply, err);
	return *rc ? END_FAIL : END_OK;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void reply_clear_texts(struct kf_llm_reply *r)
{
	for (int i = 0; i < r->n; i++) {
		free(r->texts[i]);
		free(r->finish_reasons[i]);
	}
	free(r->texts);
	free(r->finish_reasons);
	free(r->model);
	r->texts = r->finish_reasons = NULL;
	r->model = NULL;
	r->n = 0;
	r->prompt_tokens = r->completion_tokens = -1;
}

/* One call: samples completions of msgs, with retries, and with the budget
 * lowered to fit the model's context when the server says it does not
 * (at most CONTEXT_FITS times). The arguments are checked. */
static int chat_call(const struct kf_llm_config *cfg,
		     const struct kf_llm_msg *msgs, int n_msgs, int samples,
		     struct kf_llm_reply *reply, struct kf_err *err)
{
	struct kf_llm_reply init = KF_LLM_REPLY_INIT;
	struct body b = {KF_STRBUF_INIT, 0, 0, -1};
	struct curl_slist *headers = NULL;
	char *url = NULL, *req = NULL, *auth = NULL;
	CURL *h = NULL;
	struct kf_err e = KF_ERR_INIT; /* err may be NULL; retries log it */
	int rc = 0, fits = 0;
	*reply = init;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return kf_err_set(err, KF_ENOSYS, "libcurl: %s",
				  curl_easy_strerror(curl_init_rc));
	url = chat_url(cfg->base_url);
	reply->max_tokens = cfg->max_tokens;
	req = request_body(cfg, msgs, n_msgs, samples, reply->max_tokens);
	h = curl_easy_init();
	if (!h) {
		rc = kf_err_set(err, KF_ENOSYS, "%s: libcurl has no handle",
				url);
		goto out;
	}
	headers = curl_slist_append(headers, "Content-Type: application/json");
	headers = curl_slist_append(headers, "Accept: application/json");
	/* An empty Expect: saves a round trip on large prompts. */
	headers = curl_slist_append(headers, "Expect:");
	if (cfg->api_key) {
		auth = kf_xasprintf("Authorization: Bearer %s", cfg->api_key);
		headers = curl_slist_append(headers, auth);
	}
	b.cap_bytes = cfg->max_response_bytes;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)cfg->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)cfg->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
			 (curl_off_t)cfg->max_response_bytes);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &b);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "kforge/" KF_VERSION);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	long backoff_ms = cfg->backoff_ms;
	for (int a = 0;; a++) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)strlen(req));
		b.sb.len = 0;
		if (b.sb.buf)
			b.sb.buf[0] = 0;
		b.over_cap = 0;
		b.retry_after_ms = -1;
		reply_clear_texts(reply);
		enum attempt_end end = attempt(h, url, &b, reply, &rc, &e);
		long limit = 0, prompt = 0;
		if (end == END_FAIL && reply->http_status == 400 &&
		    fits < CONTEXT_FITS &&
		    context_limit(e.msg, &limit, &prompt) &&
		    (reply->max_tokens <= 0 ||
		     limit - prompt < reply->max_tokens)) {
			/* Sent again at once, with the budget that fits: not a
			 * retry (nothing was wrong with the server). */
			fits++;
			kf_log(KF_LOG_WARN,
			       "%s; asking again with %s %ld (the model's "
			       "context %ld less the prompt's %ld tokens)",
			       e.msg, budget_name(cfg), limit - prompt, limit,
			       prompt);
			reply->max_tokens = (int)(limit - prompt);
			free(req);
			req = request_body(cfg, msgs, n_msgs, samples,
					   reply->max_tokens);
			a--;
			continue;
		}
		if (end == END_OK || end == END_FAIL || a >= cfg->retries)
			break;
		long wait_ms = backoff_ms;
		if (b.retry_after_ms > wait_ms)
			wait_ms = b.retry_after_ms;
		if (wait_ms > BACKOFF_CAP_MS)
			wait_ms = BACKOFF_CAP_MS;
		kf_log(KF_LOG_WARN, "%s; retrying in %ld ms (%d of %d)", e.msg,
		       wait_ms, a + 1, cfg->retries);
		sleep_ms(wait_ms);
		backoff_ms = backoff_ms * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS
							     : backoff_ms * 2;
	}
	if (rc && reply->attempts > 1)
		kf_err_prefix(&e, "after %d attempts", reply->attempts);
	if (rc && err)
		*err = e;
out:
	if (rc)
		reply_clear_texts(reply);
	if (h)
		curl_easy_cleanup(h);
	curl_slist_free_all(headers);
	if (auth)
		memset(auth, 0, strlen(auth));
	free(auth);
	free(req);
	free(url);
	kf_strbuf_release(&b.sb);
	return rc;
}

/* What a continuation asks, after the cut text as the assistant's turn. */
static const char continue_text[] =
    "Your reply was cut off at the token limit. Continue exactly where it "
    "stopped, with no repetition and nothing before it.";

/* Continues completion i while it was cut at the budget, up to
 * cfg->continuations times; a continuation that fails leaves the text as it
 * was (logged). */
static void continue_cut(const struct kf_llm_config *cfg,
			 const struct kf_llm_msg *msgs, int n_msgs,
			 struct kf_llm_reply *reply, int i)
{
	struct kf_llm_msg *m = kf_xcalloc((size_t)n_msgs + 2, sizeof(*m));
	memcpy(m, msgs, sizeof(*m) * (size_t)n_msgs);
	for (int k = 0;
	     k < cfg->continuations &&
	     !strcmp(reply->finish_reasons[i], "length") && reply->texts[i][0];
	     k++) {
		struct kf_llm_reply part = KF_LLM_REPLY_INIT;
		struct kf_err e = KF_ERR_INIT;
		m[n_msgs] = (struct kf_llm_msg){"assistant", reply->texts[i]};
		m[n_msgs + 1] = (struct kf_llm_msg){"user", continue_text};
		int rc = chat_call(cfg, m, n_msgs + 2, 1, &part, &e);
		reply->continued++;
		reply->attempts += part.attempts;
		if (rc) {
			kf_log(KF_LOG_WARN,
			       "completion %d was cut at the token limit and "
			       "its continuation failed: %s",
			       i, e.msg);
			break;
		}
		char *joined =
		    kf_xasprintf("%s%s", reply->texts[i], part.texts[0]);
		free(reply->texts[i]);
		reply->texts[i] = joined;
		free(reply->finish_reasons[i]);
		reply->finish_reasons[i] = kf_xstrdup(part.finish_reasons[0]);
		if (reply->completion_tokens >= 0 &&
		    part.completion_tokens >= 0)
			reply->completion_tokens += part.completion_tokens;
		kf_llm_reply_release(&part);
	}
	free(m);
}

int kf_llm_chat(const struct kf_llm_config *cfg, const struct kf_llm_msg *msgs,
		int n_msgs, struct kf_llm_reply *reply, struct kf_err *err)
{
	struct kf_llm_reply init = KF_LLM_REPLY_INIT;
	*reply = init;
	if (!cfg->base_url || !cfg->model)
		return kf_err_set(err, KF_EINVAL,
				  "no LLM model set: give one with --model, "
				  "KFORGE_LLM_MODEL or a config file");
	if (n_msgs < 1 || !msgs)
		return kf_err_set(err, KF_EINVAL, "no messages to send");
	for (int i = 0; i < n_msgs; i++)
		if (!msgs[i].role || !msgs[i].content)
			return kf_err_set(err, KF_EINVAL,
					  "message %d has no role or content",
					  i);
	int rc = chat_call(cfg, msgs, n_msgs, cfg->samples, reply, err);
	for (int i = 0; !rc && i < reply->n; i++)
		continue_cut(cfg, msgs, n_msgs, reply, i);
	return rc;
}

void kf_llm_reply_release(struct kf_llm_reply *reply)
{
	struct kf_llm_reply init = KF_LLM_REPLY_INIT;
	if (!reply)
		return;
	reply_clear_texts(reply);
	*reply = init;
}
