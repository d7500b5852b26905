/*
 * respond.c: the answers of the reward service: a JSON body, an error
 * ({"error": {"code", "message"}}), and the counting of error statuses in
 * the statistics. Every route answers through these; they call nothing
 * else of src/server.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "server_int.h"

void srv_respond(struct kf_server_response *out, int status, cJSON *body)
{
	out->status = status;
	out->body = kf_json_print(body);
	out->retry_after = 0;
	cJSON_Delete(body);
}

void kf_server_response_release(struct kf_server_response *r)
{
	free(r->body);
	r->body = NULL;
}

void srv_count_status(struct kf_server *s, int status)
{
	pthread_mutex_lock(&s->lock);
	if (status >= 400 && status < 500)
		s->errors_4xx++;
	else if (status >= 500 && status != 503)
		s->errors_5xx++;
	pthread_mutex_unlock(&s->lock);
}

void srv_error(int status, const char *code, const char *message,
	       struct kf_server_response *out)
{
	cJSON *b = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(b, "error");
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	srv_respond(out, status, b);
}

void kf_server_error(struct kf_server *s, int status, const char *code,
		     const char *message, struct kf_server_response *out)
{
	srv_error(status, code, message, out);
	if (s)
		srv_count_status(s, status);
}

void srv_errorf(struct kf_server_response *out, int status, const char *code,
		const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	srv_error(status, code, msg, out);
}

void srv_add_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

void srv_bad_method(struct kf_server_response *out, const char *method,
		    const char *path, const char *allowed)
{
	srv_errorf(out, 405, "method_not_allowed", "%s %s: use %s", method,
		   path, allowed);
}
